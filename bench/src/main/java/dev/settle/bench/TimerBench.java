package dev.settle.bench;

import dev.settle.contracts.EventCodec;
import dev.settle.contracts.SessionReady;
import dev.settle.contracts.Topics;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.stream.IntStream;

/**
 * Figure 4: timer lateness with {@code timers} armed timers (1,000,000 in the full run). debounce-worker alone on its own database and broker.
 *
 * <ol>
 *   <li>Arm {@code background} timers due in an hour (they stay armed for the whole run).</li>
 *   <li>Arm {@code measured} more, due at a steady rate over the measuring period, starting a few seconds ahead.</li>
 *   <li>Read every SessionReady from the broker: lateness = its {@code firedAt} (database clock, when the firer's
 *       locking SELECT ran) − the timer's {@code fire_at}; also the time the event reached a consumer − fire_at.</li>
 * </ol>
 */
final class TimerBench {
    record Result(
            int armed,
            int measured,
            int received,
            Histogram fireLateness,
            Histogram deliveredLateness,
            double fireRate,
            Profiler.Profile profile,
            IngestBench.Cpu cpu,
            double armSeconds) {}

    private TimerBench() {}

    static Result run(Infra infra, Bench.Options o) throws Exception {
        try (Infra.Scenario s = infra.new Scenario("timers", Map.of())) {
            ConfigurableApplicationContext debounce = s.debounce();
            JdbcTemplate jdbc = debounce.getBean(JdbcTemplate.class);
            // arming a million rows: Connector/J rewrites each batch into multi-row INSERTs
            JdbcTemplate arm = new JdbcTemplate(new DriverManagerDataSource(
                    s.jdbcUrl + (s.jdbcUrl.contains("?") ? "&" : "?") + "rewriteBatchedStatements=true", "root", ""));
            int background = o.timers();
            int measured = o.timedTimers();
            Duration period = o.timerPeriod();
            Bench.log("timers: arming " + background + " background timers");
            LocalDateTime later = LocalDateTime.now(ZoneOffset.UTC).plusHours(1);
            long armStart = System.nanoTime();
            insert(
                    arm,
                    IntStream.range(0, background)
                            .mapToObj(i -> new Object[] {1 + i, later, later})
                            .toList());
            Instant first = Instant.now().plusSeconds(4);
            long stepNanos = period.toNanos() / measured;
            Map<Long, Instant> due = new HashMap<>();
            List<Object[]> rows = new ArrayList<>();
            for (int i = 0; i < measured; i++) {
                long id = 10_000_000L + i;
                Instant at = first.plusNanos(i * stepNanos).truncatedTo(java.time.temporal.ChronoUnit.MICROS);
                due.put(id, at);
                LocalDateTime ldt = LocalDateTime.ofInstant(at, ZoneOffset.UTC);
                rows.add(new Object[] {id, ldt, ldt});
            }
            insert(arm, rows);
            double armSeconds = (System.nanoTime() - armStart) / 1e9;
            Integer armed = jdbc.queryForObject("SELECT COUNT(*) FROM debounce_timer", Integer.class);
            Bench.log("timers: " + armed + " armed in " + IngestBench.fmt(armSeconds) + " s; " + measured + " due over "
                    + period.toSeconds() + " s");

            Histogram fire = Load.micros();
            Histogram delivered = Load.micros();
            Properties p = new Properties();
            p.put(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, s.kafka.bootstrapServers());
            p.put(ConsumerConfig.KEY_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            p.put(ConsumerConfig.VALUE_DESERIALIZER_CLASS_CONFIG, StringDeserializer.class.getName());
            p.put(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG, "false");
            var rec = o.profile() ? Profiler.start("timers") : null;
            double[] cpu0 = IngestBench.cpu(infra);
            int received = 0;
            try (KafkaConsumer<String, String> consumer = new KafkaConsumer<>(p)) {
                List<TopicPartition> parts = IntStream.range(0, Topics.PARTITIONS)
                        .mapToObj(i -> new TopicPartition(Topics.SESSION_READY, i))
                        .toList();
                consumer.assign(parts);
                consumer.seekToBeginning(parts);
                long deadline = System.nanoTime()
                        + Duration.between(Instant.now(), first).toNanos()
                        + period.toNanos()
                        + Duration.ofSeconds(20).toNanos();
                while (received < measured && System.nanoTime() < deadline) {
                    for (ConsumerRecord<String, String> r : consumer.poll(Duration.ofMillis(100))) {
                        Instant now = Instant.now();
                        SessionReady e = EventCodec.decode(r.value(), SessionReady.class);
                        Instant at = due.remove(e.sessionId());
                        if (at == null) {
                            continue;
                        }
                        received++;
                        Load.record(
                                fire,
                                Math.max(0, Duration.between(at, e.firedAt()).toNanos() / 1000));
                        Load.record(
                                delivered, Math.max(0, Duration.between(at, now).toNanos() / 1000));
                    }
                }
            }
            IngestBench.Cpu cpu = IngestBench.cpu(infra, cpu0);
            Profiler.Profile profile = rec == null ? null : Profiler.stop(rec, o.jfrDir());
            Bench.log("timers: " + received + "/" + measured + " fired; lateness p50 "
                    + IngestBench.fmt(Load.ms(fire, 50)) + " ms, p99 " + IngestBench.fmt(Load.ms(fire, 99)) + " ms");
            return new Result(
                    armed == null ? 0 : armed,
                    measured,
                    received,
                    fire,
                    delivered,
                    measured / (double) period.toSeconds(),
                    profile,
                    cpu,
                    armSeconds);
        }
    }

    private static void insert(JdbcTemplate jdbc, List<Object[]> rows) {
        String sql = """
                INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at)
                VALUES (?, ?, ?, 1, 'message', UTC_TIMESTAMP(6))""";
        for (int from = 0; from < rows.size(); from += 5000) {
            jdbc.batchUpdate(sql, rows.subList(from, Math.min(rows.size(), from + 5000)));
        }
    }

    static Timestamp ts(Instant i) {
        return Timestamp.from(i);
    }
}
