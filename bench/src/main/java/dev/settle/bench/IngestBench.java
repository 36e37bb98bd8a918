package dev.settle.bench;

import dev.settle.contracts.Topics;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Figures 1 and 2: ingest-api alone (no workers) on its own database and broker.
 *
 * <ol>
 *   <li>Saturation: {@code clients} closed-loop HTTP clients POST messages to random sessions of a fixed set.</li>
 *   <li>Raw limit, same pool (ingest-api's own DataSource), same clients: one transaction of one UPDATE of the
 *       session row (the version bump) and one INSERT of a message row, the shapes of the accept transaction,
 *       without HTTP and without Kafka.</li>
 *   <li>Raw produce rate on the same broker: a producer with ingest-api's settings (acks=all, linger 1 ms)
 *       sending MessageAccepted-sized records as fast as the broker acknowledges them.</li>
 *   <li>Offered-load ladder (open loop, latency from the intended send time): fractions of the saturation rate.</li>
 * </ol>
 */
final class IngestBench {
    record Step(double offered, Load.Result result) {}

    record Result(
            Map<String, Double> lockWaits,
            double statementsPerAccept,
            double statementsPerRaw,
            Load.Result saturation,
            Load.Result raw,
            double kafkaRate,
            double kafkaAckedP50Ms,
            List<Step> ladder,
            Step half,
            Cpu satCpu,
            Cpu rawCpu,
            Profiler.Profile profile,
            Profiler.Profile rawProfile) {}

    /** Cores used during a stage: this JVM and the MariaDB server. */
    record Cpu(double jvmCores, double dbCores) {}

    private IngestBench() {}

    static Result run(Infra infra, Bench.Options o) throws Exception {
        try (Infra.Scenario s = infra.new Scenario("ingest", Map.of())) {
            ConfigurableApplicationContext ingest = s.ingest();
            String base = "http://127.0.0.1:" + Infra.port(ingest);
            JdbcTemplate jdbc = ingest.getBean(JdbcTemplate.class);
            TransactionTemplate tx = ingest.getBean(TransactionTemplate.class);
            int sessions = o.ingestSessions();
            Bench.log("ingest: creating " + sessions + " sessions");
            List<Object[]> rows = new ArrayList<>();
            for (int i = 0; i < sessions; i++) {
                rows.add(new Object[] {"ing-" + i});
            }
            jdbc.batchUpdate("""
                    INSERT INTO chat_session (tenant_id, external_id, version, created_at)
                    VALUES ('default', ?, 0, UTC_TIMESTAMP(6))""", rows);

            Bench.log("ingest: saturation, " + o.clients() + " clients, "
                    + o.stage().toSeconds() + " s");
            Map<Integer, AtomicLong> statuses = new ConcurrentHashMap<>();
            Load.Op accept = (c, i) -> {
                int sid = ThreadLocalRandom.current().nextInt(sessions);
                int status = Load.post(base, "ing-" + sid, "sid=ing-" + sid + " lunch 35 and coffee 12");
                statuses.computeIfAbsent(status, k -> new AtomicLong()).incrementAndGet();
                return status == 202;
            };
            Load.closedLoop(o.clients(), Duration.ZERO, o.warmup(), accept); // warm-up: JIT, pools, broker metadata
            var rec = o.profile() ? Profiler.start("ingest-saturation") : null;
            double[] cpu0 = cpu(infra);
            long q0 = Infra.questions(jdbc);
            LockWaits waits = new LockWaits(new JdbcTemplate(
                    new org.springframework.jdbc.datasource.DriverManagerDataSource(s.jdbcUrl, "root", "")));
            Load.Result saturation = Load.closedLoop(o.clients(), Duration.ofSeconds(1), o.stage(), accept);
            waits.close();
            Bench.log("ingest: lock waits per sample " + waits.perSample() + "; statuses " + statuses + "; failed "
                    + saturation.failed());
            Cpu satCpu = cpu(infra, cpu0);
            double perAccept = (Infra.questions(jdbc) - q0 - 1) / (double) saturation.total();
            Profiler.Profile profile = rec == null ? null : Profiler.stop(rec, o.jfrDir());
            Bench.log("ingest: saturation " + Math.round(saturation.rate()) + " msg/s, jvm " + fmt(satCpu.jvmCores())
                    + " cores, db " + fmt(satCpu.dbCores()) + " cores");

            Bench.log("ingest: raw transaction limit on the same pool");
            Map<Integer, Long> ids = new ConcurrentHashMap<>();
            for (Map<String, Object> row :
                    jdbc.queryForList("SELECT id, external_id FROM chat_session WHERE external_id LIKE 'ing-%'")) {
                ids.put(
                        Integer.parseInt(((String) row.get("external_id")).substring(4)),
                        ((Number) row.get("id")).longValue());
            }
            Load.Op raw = (c, i) -> {
                int sid = ThreadLocalRandom.current().nextInt(sessions);
                Long id = ids.get(sid);
                tx.executeWithoutResult(st -> {
                    jdbc.update(RAW_UPDATE, id);
                    jdbc.update(
                            RAW_INSERT, "msg_" + UUID.randomUUID(), id, "sid=ing-" + sid + " lunch 35 and coffee 12");
                });
                return true;
            };
            Load.closedLoop(o.clients(), Duration.ZERO, o.warmup().dividedBy(2), raw);
            var rawRec = o.profile() ? Profiler.start("ingest-raw") : null;
            cpu0 = cpu(infra);
            q0 = Infra.questions(jdbc);
            Load.Result rawResult = Load.closedLoop(o.clients(), Duration.ofSeconds(1), o.stage(), raw);
            Cpu rawCpu = cpu(infra, cpu0);
            double perRaw = (Infra.questions(jdbc) - q0 - 1) / (double) rawResult.total();
            Profiler.Profile rawProfile = rawRec == null ? null : Profiler.stop(rawRec, o.jfrDir());
            Bench.log("ingest: raw " + Math.round(rawResult.rate()) + " tx/s, jvm " + fmt(rawCpu.jvmCores())
                    + " cores, db " + fmt(rawCpu.dbCores()) + " cores");

            double[] kafka = kafkaRaw(s.kafka.bootstrapServers(), o.stage().dividedBy(2));
            Bench.log("ingest: raw produce " + Math.round(kafka[0]) + " records/s");

            List<Step> ladder = new ArrayList<>();
            Step half = null;
            for (double f : o.ladder()) {
                double rate = Math.max(1, saturation.rate() * f);
                Load.Result r = Load.openLoop(rate, o.ladderStage(), 4000, accept);
                Step step = new Step(rate, r);
                ladder.add(step);
                if (f == 0.5) {
                    half = step;
                }
                Bench.log("ingest: offered " + Math.round(rate) + "/s → " + Math.round(r.rate()) + "/s, p50 "
                        + fmt(Load.ms(r.latency(), 50)) + " ms, p99 " + fmt(Load.ms(r.latency(), 99)) + " ms");
            }
            return new Result(
                    waits.perSample(),
                    perAccept,
                    perRaw,
                    saturation,
                    rawResult,
                    kafka[0],
                    kafka[1],
                    ladder,
                    half,
                    satCpu,
                    rawCpu,
                    profile,
                    rawProfile);
        }
    }

    static final String RAW_UPDATE = """
            UPDATE chat_session SET version = LAST_INSERT_ID(version + 1), last_message_at = UTC_TIMESTAMP(6)
             WHERE id = ?""";
    static final String RAW_INSERT = """
            INSERT INTO chat_message (message_uid, session_id, role, text, version, created_at)
            VALUES (?, ?, 'user', ?, LAST_INSERT_ID(), UTC_TIMESTAMP(6))""";

    /**
     * Records/s acknowledged (acks=all) and the median ack time in ms, pipelined up to 10,000 in flight, on the topic
     * ingest-api publishes to (it exists already; nothing consumes it in this scenario).
     */
    static double[] kafkaRaw(String bootstrap, Duration duration) throws InterruptedException {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "1");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        String value = "{\"sessionId\":123456,\"version\":42,\"acceptedAt\":\"" + Instant.now()
                + "\",\"oldestUnansweredAt\":\"" + Instant.now() + "\"}";
        Histogram acks = Load.micros();
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.send(new ProducerRecord<>(Topics.MESSAGE_ACCEPTED, "warm", value))
                    .get();
            Semaphore window = new Semaphore(10_000);
            AtomicLong acked = new AtomicLong();
            long start = System.nanoTime();
            long end = start + duration.toNanos();
            long i = 0;
            while (System.nanoTime() < end) {
                window.acquire();
                long t0 = System.nanoTime();
                producer.send(
                        new ProducerRecord<>(Topics.MESSAGE_ACCEPTED, Long.toString(i++ % 10_000), value), (md, e) -> {
                            window.release();
                            if (e == null) {
                                acked.incrementAndGet();
                                synchronized (acks) {
                                    Load.record(acks, (System.nanoTime() - t0) / 1000);
                                }
                            }
                        });
            }
            producer.flush();
            double seconds = (System.nanoTime() - start) / 1e9;
            return new double[] {acked.get() / seconds, Load.ms(acks, 50)};
        } catch (java.util.concurrent.ExecutionException e) {
            throw new IllegalStateException(e);
        }
    }

    static double[] cpu(Infra infra) {
        return new double[] {System.nanoTime(), Infra.ownCpuSeconds(), infra.dbCpuSeconds()};
    }

    static Cpu cpu(Infra infra, double[] before) {
        double[] now = cpu(infra);
        double wall = (now[0] - before[0]) / 1e9;
        return new Cpu((now[1] - before[1]) / wall, (now[2] - before[2]) / wall);
    }

    static String fmt(double v) {
        return Double.isNaN(v) ? "–" : v >= 100 ? Long.toString(Math.round(v)) : String.format("%.1f", v);
    }
}
