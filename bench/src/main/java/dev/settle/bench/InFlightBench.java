package dev.settle.bench;

import dev.settle.contracts.EventCodec;
import dev.settle.contracts.SessionReady;
import dev.settle.contracts.Topics;
import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Figure 5: in-flight turns of one agent-worker (its own JVM, {@code -Xmx512m}) with a fixed 5 s model latency.
 *
 * <ol>
 *   <li>Create sessions with one unanswered message each, directly in the database.</li>
 *   <li>For each level L, publish SessionReady events at L / 5 s⁻¹ for the hold time: if the worker keeps up, L
 *       turns are in flight at once.</li>
 *   <li>Sample RUNNING turns in the database and the worker's heap every 250 ms; time each turn from its
 *       SessionReady to its webhook.</li>
 * </ol>
 */
final class InFlightBench {
    record Level(
            int target,
            long modelMs,
            double rate,
            int sessions,
            int replied,
            double statementsPerTurn,
            double meanRunning,
            int peakRunning,
            long peakHeapUsed,
            long peakHeapAfterGc,
            Histogram turn,
            Map<String, Histogram> stages,
            double agentCpuMs,
            double agentJitMs,
            double benchCpuMs,
            double dbCpuMs) {}

    /** Where a turn's time goes, from SessionReady to webhook (database instants and the double's log). */
    static final List<String> STAGES = List.of(
            "SessionReady → turn started (consume, claim, history, begin)",
            "turn started → model request (prompt)",
            "model request → model done (the model's latency)",
            "model done → reply committed (stream, persist, commit)",
            "reply committed → webhook received (outbox, POST)");

    record Sample(double seconds, int running, double heapMb) {}

    /** @param maxInFlight the worker's {@code settle.agent.max-in-flight} */
    record Result(
            List<Level> levels,
            List<Sample> samples,
            String heapLimit,
            int maxInFlight,
            Profiler.Profile profile,
            boolean oom) {}

    private static final double WARMUP_RATE = 50;

    private InFlightBench() {}

    static Result run(Infra infra, Bench.Options o) throws Exception {
        Model.Latency fixed = Model.Latency.parse("fixed:" + o.inflightModelMs());
        try (Model model = new Model(fixed, false, false);
                Hooks hooks = new Hooks();
                Infra.Scenario s = infra.new Scenario("inflight", Map.of())) {
            List<String> cmd = new ArrayList<>();
            cmd.add(ProcessHandle.current().info().command().orElse("java"));
            cmd.add("-Xmx" + o.agentHeap());
            cmd.add("-Djava.awt.headless=true");
            Path jfr = o.jfrDir().resolve("agent-inflight.jfr");
            if (o.profile()) {
                cmd.add("-XX:StartFlightRecording=filename=" + jfr + ",settings=profile,dumponexit=true");
                cmd.add("-XX:FlightRecorderOptions:stackdepth=256");
            }
            cmd.add("-cp");
            cmd.add(System.getProperty("java.class.path"));
            cmd.add(AgentProcess.class.getName());
            // the worker may hold every turn of the largest level (a --set of its own wins: it comes later)
            int maxInFlight = Integer.parseInt(
                    String.valueOf(s.shared.getOrDefault("settle.agent.max-in-flight", maxInFlight(o))));
            cmd.add("settle.agent.max-in-flight=" + maxInFlight);
            s.shared.forEach((k, v) -> cmd.add(k + "=" + v));
            cmd.add("settle.llm.url=" + model.baseUrl());
            cmd.add("settle.llm.timeout=" + (Math.max(o.inflightModelMs(), o.inflightBigModelMs()) / 1000 + 60) + "s");
            cmd.add("settle.webhook.url=" + hooks.url());
            Process child = new ProcessBuilder(cmd).redirectErrorStream(true).start();
            Instant measuredFrom = Instant.MAX; // set when the warm-up ends
            // CPU seconds so far: the worker, this JVM, MariaDB, the worker's JIT compiler threads
            java.util.function.Supplier<double[]> cpuNow = () -> new double[] {
                Infra.cpuSeconds(child.pid()),
                Infra.ownCpuSeconds(),
                infra.dbCpuSeconds(),
                Infra.jitCpuSeconds(child.pid())
            };
            AtomicLong heapUsed = new AtomicLong();
            AtomicLong heapAfterGc = new AtomicLong();
            java.util.concurrent.CountDownLatch ready = new java.util.concurrent.CountDownLatch(1);
            boolean[] oom = {false};
            Thread.ofPlatform().daemon().start(() -> {
                try (BufferedReader r = new BufferedReader(new InputStreamReader(child.getInputStream()))) {
                    String line;
                    while ((line = r.readLine()) != null) {
                        if (line.equals("READY")) {
                            ready.countDown();
                        } else if (line.startsWith("HEAP ")) {
                            String[] f = line.split(" ");
                            heapUsed.set(Long.parseLong(f[1]));
                            heapAfterGc.set(Long.parseLong(f[2]));
                        } else {
                            if (line.contains("OutOfMemoryError")) {
                                oom[0] = true;
                            }
                            if (line.contains("ERROR") || line.contains("Exception") || line.contains("WARN")) {
                                System.out.println("[agent] " + line);
                            }
                        }
                    }
                } catch (Exception ignored) {
                    // the child ended
                }
            });
            if (!ready.await(180, TimeUnit.SECONDS)) {
                child.destroyForcibly();
                throw new IllegalStateException("the agent-worker process did not start");
            }
            DriverManagerDataSource ds = new DriverManagerDataSource(s.jdbcUrl, "root", "");
            JdbcTemplate jdbc = new JdbcTemplate(ds);
            List<Level> levels = new ArrayList<>();
            List<Sample> samples = new java.util.concurrent.CopyOnWriteArrayList<>();
            long t0 = System.nanoTime();
            Properties p = new Properties();
            p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, s.kafka.bootstrapServers());
            p.put(ProducerConfig.ACKS_CONFIG, "all");
            p.put(ProducerConfig.LINGER_MS_CONFIG, "1");
            p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
            long nextId = 1;
            long[] peak = new long[2];
            java.util.concurrent.atomic.AtomicInteger running = new java.util.concurrent.atomic.AtomicInteger();
            Thread sampler = Thread.ofPlatform().daemon().start(() -> {
                JdbcTemplate sj = new JdbcTemplate(new DriverManagerDataSource(s.jdbcUrl, "root", ""));
                while (!Thread.currentThread().isInterrupted()) {
                    try {
                        Integer n = sj.queryForObject(
                                "SELECT COUNT(*) FROM chat_turn WHERE state = 'RUNNING'", Integer.class);
                        running.set(n == null ? 0 : n);
                        samples.add(
                                new Sample((System.nanoTime() - t0) / 1e9, running.get(), heapUsed.get() / 1048576.0));
                        Thread.sleep(250);
                    } catch (InterruptedException e) {
                        return;
                    } catch (RuntimeException e) {
                        // keep sampling
                    }
                }
            });
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
                // warm-up, not measured: a worker runs for days, its first seconds are JIT compilation
                int warm = (int) Math.round(WARMUP_RATE * o.inflightWarmup().toSeconds());
                createSessions(jdbc, nextId, warm);
                long warmFirst = nextId;
                nextId += warm;
                Bench.log("in-flight: warm-up, " + warm + " turns at " + Math.round(WARMUP_RATE) + "/s (not measured)");
                Load.paced(
                        WARMUP_RATE,
                        warm,
                        i -> producer.send(new ProducerRecord<>(
                                Topics.SESSION_READY,
                                Long.toString(warmFirst + i),
                                EventCodec.encode(new SessionReady(warmFirst + i, 1, "window", Instant.now())))));
                PipelineBench.await(o.inflightDrain(), () -> {
                    for (int i = 0; i < warm; i++) {
                        if (hooks.covering("inf-" + (warmFirst + i), 1) == null) {
                            return false;
                        }
                    }
                    return true;
                });
                measuredFrom = Instant.now();
                List<long[]> specs = new ArrayList<>(); // level, model ms, hold s, drain s
                for (int target : o.inflightLevels()) {
                    specs.add(new long[] {
                        target,
                        o.inflightModelMs(),
                        o.inflightHold().toSeconds(),
                        o.inflightDrain().toSeconds()
                    });
                }
                if (o.inflightBigLevel() > 0) {
                    // one model latency of arrivals: the level is reached just as the first turns end
                    long modelS = o.inflightBigModelMs() / 1000;
                    specs.add(new long[] {o.inflightBigLevel(), o.inflightBigModelMs(), modelS, modelS + 60});
                }
                for (long[] spec : specs) {
                    int target = (int) spec[0];
                    long modelMs = spec[1];
                    Duration hold = Duration.ofSeconds(spec[2]);
                    Duration drain = Duration.ofSeconds(spec[3]);
                    model.latency(Model.Latency.parse("fixed:" + modelMs));
                    double rate = target * 1000.0 / modelMs;
                    int count = (int) Math.round(rate * hold.toSeconds());
                    long firstId = nextId;
                    createSessions(jdbc, firstId, count);
                    nextId += count;
                    Bench.log("in-flight: level " + target + " (" + Math.round(rate) + " turns/s for "
                            + hold.toSeconds() + " s, model " + modelMs + " ms)");
                    long[] published = new long[count];
                    heapUsed.set(0);
                    peak[0] = 0;
                    peak[1] = 0;
                    int startSample = samples.size();
                    Thread heapPeak = Thread.ofPlatform().daemon().start(() -> {
                        while (!Thread.currentThread().isInterrupted()) {
                            peak[0] = Math.max(peak[0], heapUsed.get());
                            peak[1] = Math.max(peak[1], heapAfterGc.get());
                            try {
                                Thread.sleep(100);
                            } catch (InterruptedException e) {
                                return;
                            }
                        }
                    });
                    long levelStart = System.nanoTime();
                    long q0 = Infra.questions(jdbc);
                    double[] cpu0 = cpuNow.get();
                    Load.paced(rate, count, i -> {
                        long id = firstId + i;
                        published[(int) i] = System.nanoTime();
                        producer.send(new ProducerRecord<>(
                                Topics.SESSION_READY,
                                Long.toString(id),
                                EventCodec.encode(new SessionReady(id, 1, "window", Instant.now()))));
                    });
                    double steadyFrom = (levelStart - t0) / 1e9 + modelMs / 1000.0;
                    double steadyTo = (System.nanoTime() - t0) / 1e9;
                    PipelineBench.await(drain, () -> {
                        for (int i = 0; i < count; i += Math.max(1, count / 50)) {
                            if (hooks.covering("inf-" + (firstId + i), 1) == null) {
                                return false;
                            }
                        }
                        return hooks.covering("inf-" + (firstId + count - 1), 1) != null;
                    });
                    PipelineBench.await(drain.dividedBy(2), () -> {
                        for (int i = 0; i < count; i++) {
                            if (hooks.covering("inf-" + (firstId + i), 1) == null) {
                                return false;
                            }
                        }
                        return true;
                    });
                    heapPeak.interrupt();
                    long statements = Infra.questions(jdbc) - q0;
                    double[] cpu1 = cpuNow.get();
                    Histogram turn = Load.micros();
                    int replied = 0;
                    for (int i = 0; i < count; i++) {
                        Hooks.Hook h = hooks.covering("inf-" + (firstId + i), 1);
                        if (h != null) {
                            replied++;
                            Load.record(turn, (h.receivedNanos() - published[i]) / 1000);
                        }
                    }
                    List<Sample> window = samples.subList(startSample, samples.size()).stream()
                            .filter(x -> x.seconds() >= steadyFrom && x.seconds() <= steadyTo)
                            .toList();
                    double mean =
                            window.stream().mapToInt(Sample::running).average().orElse(0);
                    int peakRunning = samples.subList(startSample, samples.size()).stream()
                            .mapToInt(Sample::running)
                            .max()
                            .orElse(0);
                    Map<String, Histogram> stages = stages(jdbc, model, hooks, firstId, count, published);
                    Level level = new Level(
                            target,
                            modelMs,
                            rate,
                            count,
                            replied,
                            statements / (double) Math.max(1, replied),
                            mean,
                            peakRunning,
                            peak[0],
                            peak[1],
                            turn,
                            stages,
                            (cpu1[0] - cpu0[0]) * 1000 / count,
                            (cpu1[3] - cpu0[3]) * 1000 / count,
                            (cpu1[1] - cpu0[1]) * 1000 / count,
                            (cpu1[2] - cpu0[2]) * 1000 / count);
                    levels.add(level);
                    Bench.log("in-flight: level " + target + ": " + replied + "/" + count + " replied, mean running "
                            + Math.round(mean) + ", peak " + peakRunning + ", heap peak " + (peak[0] >> 20)
                            + " MB (after GC " + (peak[1] >> 20) + " MB), turn p50 "
                            + IngestBench.fmt(Load.ms(turn, 50)) + " ms p99 " + IngestBench.fmt(Load.ms(turn, 99))
                            + " ms");
                    Bench.log("in-flight:   CPU per turn: agent-worker " + IngestBench.fmt(level.agentCpuMs())
                            + " (JIT "
                            + IngestBench.fmt(level.agentJitMs()) + ")"
                            + " ms, bench JVM (model double, broker, receiver) " + IngestBench.fmt(level.benchCpuMs())
                            + " ms, MariaDB " + IngestBench.fmt(level.dbCpuMs()) + " ms");
                    stages.forEach((name, h) -> Bench.log("in-flight:   " + name + ": p50 "
                            + IngestBench.fmt(Load.ms(h, 50)) + " ms, p99 " + IngestBench.fmt(Load.ms(h, 99)) + " ms"));
                    Load.sleep(Duration.ofSeconds(1));
                }
            } finally {
                sampler.interrupt();
                child.getOutputStream().close();
                if (!child.waitFor(60, TimeUnit.SECONDS)) {
                    child.destroyForcibly();
                }
            }
            Profiler.Profile profile = o.profile() && jfr.toFile().exists()
                    ? Profiler.summarize("agent-inflight", jfr, measuredFrom) // start-up and warm-up left out
                    : null;
            return new Result(levels, new ArrayList<>(samples), o.agentHeap(), maxInFlight, profile, oom[0]);
        }
    }

    /** The largest level with a quarter of headroom, never under the worker's default of 4096. */
    static int maxInFlight(Bench.Options o) {
        int top = Math.max(
                o.inflightBigLevel(),
                java.util.Arrays.stream(o.inflightLevels()).max().orElse(0));
        return Math.max(4096, top + top / 4);
    }

    private static Map<String, Histogram> stages(
            JdbcTemplate jdbc, Model model, Hooks hooks, long firstId, int count, long[] published) {
        long offset = System.nanoTime() - PipelineBench.toNanos(Instant.now());
        Map<Long, long[]> rows = new java.util.HashMap<>();
        jdbc.query(
                """
                SELECT t.session_id, t.started_at, t.ended_at FROM chat_turn t
                 WHERE t.session_id BETWEEN ? AND ? AND t.state = 'COMMITTED'""",
                rs -> {
                    rows.put(rs.getLong(1), new long[] {
                        offset + PipelineBench.toNanos(dev.settle.schema.DbTime.instant(rs, "started_at")),
                        offset + PipelineBench.toNanos(dev.settle.schema.DbTime.instant(rs, "ended_at"))
                    });
                },
                firstId,
                firstId + count - 1);
        Map<String, Histogram> stages = new java.util.LinkedHashMap<>();
        STAGES.forEach(name -> stages.put(name, Load.micros()));
        List<Histogram> st = new ArrayList<>(stages.values());
        for (int i = 0; i < count; i++) {
            long id = firstId + i;
            long[] r = rows.get(id);
            List<Model.Call> calls = model.callsOf("inf-" + id);
            Hooks.Hook hook = hooks.covering("inf-" + id, 1);
            if (r == null || hook == null || calls.size() != 1) {
                continue;
            }
            Model.Call call = calls.getFirst();
            long modelDone = call.arrivedNanos() + call.latencyMs() * 1_000_000;
            Load.record(st.get(0), Math.max(0, r[0] - published[i]) / 1000);
            Load.record(st.get(1), Math.max(0, call.arrivedNanos() - r[0]) / 1000);
            Load.record(st.get(2), call.latencyMs() * 1000);
            Load.record(st.get(3), Math.max(0, r[1] - modelDone) / 1000);
            Load.record(st.get(4), Math.max(0, hook.receivedNanos() - r[1]) / 1000);
        }
        return stages;
    }

    private static void createSessions(JdbcTemplate jdbc, long firstId, int count) {
        LocalDateTime now = LocalDateTime.now(ZoneOffset.UTC);
        List<Object[]> sessions = new ArrayList<>();
        List<Object[]> messages = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            long id = firstId + i;
            sessions.add(new Object[] {id, "inf-" + id, now, now, now});
            messages.add(new Object[] {"msg_inf_" + id, id, "sid=inf-" + id + " lunch 35", now});
        }
        for (int from = 0; from < count; from += 2000) {
            int to = Math.min(count, from + 2000);
            jdbc.batchUpdate("""
                    INSERT INTO chat_session (id, tenant_id, external_id, version, oldest_unanswered_at, last_message_at, created_at)
                    VALUES (?, 'default', ?, 1, ?, ?, ?)""", sessions.subList(from, to));
            jdbc.batchUpdate("""
                    INSERT INTO chat_message (message_uid, session_id, role, text, version, created_at)
                    VALUES (?, ?, 'user', ?, 1, ?)""", messages.subList(from, to));
        }
    }
}
