package dev.settle.bench;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.settle.contracts.Topics;
import dev.settle.ingest.IngestApiApplication;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Figures 1 and 2: ingest-api alone (no workers) on its own database and broker, in a JVM of its own
 * ({@link ServiceProcess}), so that the HTTP clients in this JVM are not counted as its CPU.
 *
 * <ol>
 *   <li>Saturation: {@code clients} closed-loop HTTP clients POST messages to random sessions of a fixed set.</li>
 *   <li>Raw limit, a pool with ingest-api's size and Connector/J settings in this JVM, same clients: one
 *       transaction of one UPDATE of the session row (the version bump) and one INSERT of a message row, the
 *       shapes of the accept transaction, without HTTP and without Kafka.</li>
 *   <li>Offered-load ladder (open loop, latency from the intended send time): fractions of the saturation rate.</li>
 *   <li>Raw produce rate on the same broker: a producer with ingest-api's settings (acks=all, linger 1 ms)
 *       sending MessageAccepted-sized records as fast as the broker acknowledges them (after the ladder, whose
 *       latencies its garbage would disturb).</li>
 *   <li>Bare accept: the same clients against {@link dev.settle.bench.bare.BareAcceptApp} in a JVM of its own
 *       (same heap), the two raw statements behind Spring MVC: what the stack alone costs.</li>
 *   <li>Group commit ({@value #GROUP_COMMIT}{@code =true}, unless the run's default mode has it already) in a JVM
 *       of its own: saturation as above, then the open loop at the default mode's half-load rate (the operating
 *       point an operator compares the two modes at: same offered rate, same step length), in {@value #PAIRS}
 *       rounds that alternate between the two modes' instances (both kept running), each mode's steps pooled into
 *       one histogram, so that a slow moment of the machine falls on both; and at half of its own saturation.</li>
 * </ol>
 *
 * <p>Every stage reports the CPU of each process: the service JVM and MariaDB's {@code mariadbd} from
 * {@code /proc/<pid>/stat}, this JVM (clients, broker) from its own.
 */
final class IngestBench {
    record Step(double offered, Load.Result result) {}

    record Result(
            Map<String, Double> lockWaits,
            double statementsPerAccept,
            double statementsPerRaw,
            double statementsPerBare,
            Load.Result saturation,
            Load.Result raw,
            Load.Result bare,
            double kafkaRate,
            double kafkaAckedP50Ms,
            List<Step> ladder,
            Step half,
            Step offHalf,
            Cpu satCpu,
            Cpu rawCpu,
            Cpu bareCpu,
            Stage groupCommit,
            Step groupCommitHalf,
            Step groupCommitOwnHalf,
            Profiler.Profile profile,
            Profiler.Profile rawProfile,
            Profiler.Profile bareProfile,
            double satIdleCores,
            double bareIdleCores) {}

    /**
     * Cores used during a stage by each process: the service's own JVM (ingest-api or the bare app; 0 for the raw
     * stage, which has none), this JVM (the HTTP clients, the broker, and for the raw stage the transactions) and the
     * MariaDB server.
     */
    record Cpu(double serviceCores, double jvmCores, double dbCores) {
        Cpu(double jvmCores, double dbCores) {
            this(0, jvmCores, dbCores);
        }

        /** CPU ms per operation of each process, at {@code rate} operations/s: service, this JVM, MariaDB. */
        double[] msPer(double rate) {
            return new double[] {serviceCores * 1000 / rate, jvmCores * 1000 / rate, dbCores * 1000 / rate};
        }
    }

    /** A closed-loop stage against one service JVM: rate and latency, CPU, SQL statements each, JFR profile. */
    record Stage(Load.Result result, Cpu cpu, double statementsEach, Profiler.Profile profile, double idleCores) {}

    /**
     * Cores the service's JVM uses with no requests, over {@value #IDLE_SECONDS} s right after the warm-up (JIT
     * compilation still running, background loops, GC): included in the CPU per message of the stage that follows.
     */
    static double idleCores(Child service) {
        double c0 = service.cpuSeconds();
        long t0 = System.nanoTime();
        Load.sleep(Duration.ofSeconds(IDLE_SECONDS));
        return (service.cpuSeconds() - c0) / ((System.nanoTime() - t0) / 1e9);
    }

    static final int IDLE_SECONDS = 2;

    static final String GROUP_COMMIT = "settle.ingest.group-commit";

    /** The service JVMs' heap: ingest-api's and the bare app's alike. */
    static final String SERVICE_HEAP = "1g";

    private IngestBench() {}

    static Result run(Infra infra, Bench.Options o) throws Exception {
        try (Infra.Scenario s = infra.new Scenario("ingest", Map.of())) {
            Map<String, Object> props = new LinkedHashMap<>(s.shared);
            // figure 1's first instance writes one message per transaction, unless the run says otherwise
            props.putIfAbsent(GROUP_COMMIT, o.extra().getOrDefault(GROUP_COMMIT, "false"));
            props.put("server.port", "0");
            props.put("management.server.port", "0");
            Bench.log("ingest: starting ingest-api in its own JVM");
            Child ingest = new Child("ingest", SERVICE_HEAP, props);
            String base = ingest.base();
            HikariDataSource pool = samePool(s.jdbcUrl);
            JdbcTemplate jdbc = new JdbcTemplate(pool);
            TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(pool));
            int sessions = o.ingestSessions();
            Bench.log("ingest: creating " + sessions + " sessions");
            Infra.createSessions(jdbc, "ing-", sessions);

            Bench.log("ingest: saturation, " + o.clients() + " clients, "
                    + o.stage().toSeconds() + " s");
            Map<Integer, AtomicLong> statuses = new ConcurrentHashMap<>();
            String[] target = {base};
            Load.Op accept = (c, i) -> {
                int sid = ThreadLocalRandom.current().nextInt(sessions);
                int status = Load.post(target[0], "ing-" + sid, "sid=ing-" + sid + " lunch 35 and coffee 12");
                statuses.computeIfAbsent(status, k -> new AtomicLong()).incrementAndGet();
                return status == 202;
            };
            Load.closedLoop(o.clients(), Duration.ZERO, o.warmup(), accept); // warm-up: JIT, pools, broker metadata
            double satIdle = idleCores(ingest);
            if (o.profile()) {
                ingest.jfrStart();
            }
            double[] cpu0 = cpu(infra, ingest);
            long q0 = Infra.questions(jdbc);
            LockWaits waits = new LockWaits(new JdbcTemplate(
                    new org.springframework.jdbc.datasource.DriverManagerDataSource(s.jdbcUrl, "root", "")));
            Load.Result saturation = Load.closedLoop(o.clients(), Duration.ofSeconds(1), o.stage(), accept);
            waits.close();
            Bench.log("ingest: lock waits per sample " + waits.perSample() + "; statuses " + statuses + "; failed "
                    + saturation.failed());
            Cpu satCpu = cpu(infra, ingest, cpu0);
            double perAccept = (Infra.questions(jdbc) - q0 - 1) / (double) saturation.total();
            Profiler.Profile profile = o.profile() ? ingest.jfrStop("ingest-saturation", o.jfrDir()) : null;
            logCpu("saturation", saturation.rate(), "msg/s", satCpu);

            Bench.log("ingest: raw transaction limit, a pool like ingest-api's in this JVM");
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
            cpu0 = cpu(infra, ingest);
            q0 = Infra.questions(jdbc);
            Load.Result rawResult = Load.closedLoop(o.clients(), Duration.ofSeconds(1), o.stage(), raw);
            Cpu rawCpu = cpu(infra, ingest, cpu0);
            double perRaw = (Infra.questions(jdbc) - q0 - 1) / (double) rawResult.total();
            Profiler.Profile rawProfile = rawRec == null ? null : Profiler.stop(rawRec, o.jfrDir());
            logCpu("raw", rawResult.rate(), "tx/s", rawCpu);

            List<Step> ladder = new ArrayList<>();
            Step half = null;
            for (double f : o.ladder()) {
                Step step = step("", Math.max(1, saturation.rate() * f), accept, o);
                ladder.add(step);
                if (f == HALF) {
                    half = step;
                }
            }
            // after the ladder: the flood of records it produces (and collects) in this JVM, which also runs the load
            // clients, would otherwise stall one of the ladder's steps
            double[] kafka = kafkaRaw(s.kafka.bootstrapServers(), o.stage().dividedBy(2));
            Bench.log("ingest: raw produce " + Math.round(kafka[0]) + " records/s");

            boolean gcAlready = "true".equals(String.valueOf(props.get(GROUP_COMMIT)));
            Bench.log("ingest: starting the bare accept app"
                    + (gcAlready ? "" : " and ingest-api with " + GROUP_COMMIT + "=true") + ", each in its own JVM");
            Map<String, Object> gcProps = new LinkedHashMap<>(props);
            gcProps.put(GROUP_COMMIT, "true");
            var bareStart = java.util.concurrent.CompletableFuture.supplyAsync(() -> child("bare", props));
            var gcStart = gcAlready
                    ? java.util.concurrent.CompletableFuture.<Child>completedFuture(null)
                    : java.util.concurrent.CompletableFuture.supplyAsync(() -> child("ingest", gcProps));
            // both started before either is measured: a JVM starting takes the CPU the measured one needs
            Child gcChild = gcStart.join();
            Stage bare;
            try (Child bareApp = bareStart.join()) {
                target[0] = bareApp.base();
                bare = measure("bare accept", "ingest-bare-accept", bareApp, infra, jdbc, accept, statuses, o);
            }
            Stage gc = null;
            Step gcHalf = null;
            Step offHalf = null;
            Step gcOwnHalf = null;
            try (ingest;
                    Child gcApp = gcChild) {
                if (gcApp != null) {
                    target[0] = gcApp.base();
                    gc = measure(
                            "saturation, group commit", "ingest-group-commit", gcApp, infra, jdbc, accept, statuses, o);
                    if (half != null) {
                        List<Step> off = new ArrayList<>();
                        List<Step> on = new ArrayList<>();
                        for (int round = 0; round < PAIRS; round++) {
                            target[0] = base;
                            off.add(step("group commit off, round " + (round + 1) + ", ", half.offered(), accept, o));
                            target[0] = gcApp.base();
                            on.add(step("group commit on, round " + (round + 1) + ", ", half.offered(), accept, o));
                        }
                        offHalf = pooled(off);
                        gcHalf = pooled(on);
                    }
                    gcOwnHalf = step("group commit, ", Math.max(1, gc.result().rate() * HALF), accept, o);
                }
            }
            pool.close();
            return new Result(
                    waits.perSample(),
                    perAccept,
                    perRaw,
                    bare.statementsEach(),
                    saturation,
                    rawResult,
                    bare.result(),
                    kafka[0],
                    kafka[1],
                    ladder,
                    half,
                    offHalf,
                    satCpu,
                    rawCpu,
                    bare.cpu(),
                    gc,
                    gcHalf,
                    gcOwnHalf,
                    profile,
                    rawProfile,
                    bare.profile(),
                    satIdle,
                    bare.idleCores());
        }
    }

    /** The ladder's step that goal 2 compares the modes at: half of the saturation rate. */
    static final double HALF = 0.5;

    /** Rounds of goal 2's comparison at half load, each one step of each mode. */
    static final int PAIRS = 3;

    /** Steps of one offered rate as one: their latencies in one histogram, their counts and seconds summed. */
    static Step pooled(List<Step> steps) {
        Histogram latency = Load.micros();
        long ok = 0;
        long failed = 0;
        long total = 0;
        double seconds = 0;
        for (Step s : steps) {
            latency.add(s.result().latency());
            ok += s.result().ok();
            failed += s.result().failed();
            total += s.result().total();
            seconds += s.result().seconds();
        }
        return new Step(steps.getFirst().offered(), new Load.Result(ok, failed, seconds, latency, total));
    }

    /** One open-loop step of the ladder's length at {@code rate} against the current target. */
    private static Step step(String label, double rate, Load.Op accept, Bench.Options o) throws InterruptedException {
        Load.Result r = Load.openLoop(rate, o.ladderStage(), 4000, accept);
        Bench.log("ingest: " + label + "offered " + Math.round(rate) + "/s → " + Math.round(r.rate()) + "/s, p50 "
                + fmt(Load.ms(r.latency(), 50)) + " ms, p99 " + fmt(Load.ms(r.latency(), 99)) + " ms");
        return new Step(rate, r);
    }

    private static Child child(String service, Map<String, Object> props) {
        try {
            return new Child(service, SERVICE_HEAP, props);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Warm-up, then the measured closed loop of {@code clients} against {@code service}. */
    private static Stage measure(
            String stage,
            String recording,
            Child service,
            Infra infra,
            JdbcTemplate jdbc,
            Load.Op op,
            Map<Integer, AtomicLong> statuses,
            Bench.Options o)
            throws Exception {
        Load.closedLoop(o.clients(), Duration.ZERO, o.warmup(), op);
        double idle = idleCores(service);
        statuses.clear();
        if (o.profile()) {
            service.jfrStart();
        }
        double[] cpu0 = cpu(infra, service);
        long q0 = Infra.questions(jdbc);
        Load.Result r = Load.closedLoop(o.clients(), Duration.ofSeconds(1), o.stage(), op);
        Cpu cpu = cpu(infra, service, cpu0);
        double each = (Infra.questions(jdbc) - q0 - 1) / (double) r.total();
        Profiler.Profile profile = o.profile() ? service.jfrStop(recording, o.jfrDir()) : null;
        Bench.log("ingest: " + stage + " statuses " + statuses + "; SQL statements each " + fmt(each));
        logCpu(stage, r.rate(), "msg/s", cpu);
        return new Stage(r, cpu, each, profile, idle);
    }

    /** A HikariCP pool with ingest-api's size and Connector/J properties, in this JVM. */
    static HikariDataSource samePool(String jdbcUrl) {
        Map<String, Object> d = IngestApiApplication.defaultProperties();
        HikariConfig c = new HikariConfig();
        c.setJdbcUrl(jdbcUrl);
        c.setUsername("root");
        c.setPassword("");
        c.setMaximumPoolSize(Integer.parseInt((String) d.get("spring.datasource.hikari.maximum-pool-size")));
        String prefix = "spring.datasource.hikari.data-source-properties.";
        d.forEach((k, v) -> {
            if (k.startsWith(prefix)) {
                c.addDataSourceProperty(k.substring(prefix.length()), v);
            }
        });
        return new HikariDataSource(c);
    }

    private static void logCpu(String stage, double rate, String unit, Cpu cpu) {
        double[] ms = cpu.msPer(rate);
        Bench.log("ingest: " + stage + " " + Math.round(rate) + " " + unit + "; cores: service "
                + fmt(cpu.serviceCores())
                + ", bench JVM " + fmt(cpu.jvmCores()) + ", MariaDB " + fmt(cpu.dbCores()) + "; CPU ms each: service "
                + fmt2(ms[0]) + ", bench JVM " + fmt2(ms[1]) + ", MariaDB " + fmt2(ms[2]) + "; load "
                + Bench.loadAverage());
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
        return new double[] {System.nanoTime(), Infra.ownCpuSeconds(), infra.dbCpuSeconds(), 0};
    }

    static double[] cpu(Infra infra, Child service) {
        double[] c = cpu(infra);
        c[3] = service.cpuSeconds();
        return c;
    }

    static Cpu cpu(Infra infra, double[] before) {
        double[] now = cpu(infra);
        double wall = (now[0] - before[0]) / 1e9;
        return new Cpu((now[1] - before[1]) / wall, (now[2] - before[2]) / wall);
    }

    static Cpu cpu(Infra infra, Child service, double[] before) {
        double[] now = cpu(infra, service);
        double wall = (now[0] - before[0]) / 1e9;
        return new Cpu((now[3] - before[3]) / wall, (now[1] - before[1]) / wall, (now[2] - before[2]) / wall);
    }

    /** Two decimals below 10 (CPU ms per operation), else as {@link #fmt}. */
    static String fmt2(double v) {
        return Double.isNaN(v) ? "–" : v >= 10 ? fmt(v) : String.format("%.2f", v);
    }

    static String fmt(double v) {
        return Double.isNaN(v) ? "–" : v >= 100 ? Long.toString(Math.round(v)) : String.format("%.1f", v);
    }
}
