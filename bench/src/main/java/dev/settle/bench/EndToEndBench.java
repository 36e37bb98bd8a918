package dev.settle.bench;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * Figure 7: CPU per answered message, end to end, on the quickstart's stack. Settle's processes are what the
 * quickstart runs, each apart so that its CPU is its own: the quickstart's JVM ({@link QuickstartProcess}: ingest-api,
 * debounce-worker and agent-worker), the Kafka broker (the quickstart's {@code EmbeddedKafka}, in a JVM of its own
 * instead of inside the quickstart's) and the MariaDB server. The load generator, the model double and the webhook
 * receiver run in the bench's JVM and are not Settle's cost; they are reported apart.
 *
 * <p>Load: open loop at a fixed rate, one message on a fresh session each, the model double answering at once.
 * The rate is about {@value #LOAD_SHARE} of what the machine answers, estimated by a probe at a low rate: the
 * machine's cores divided by the CPU per answered message of every process there (the bench's included). An
 * answered message is a distinct {@code reply.created} webhook acknowledged by the receiver. CPU per answered
 * message = each process's CPU time ({@code /proc/<pid>/stat}) over the measured window / replies received in it.
 */
final class EndToEndBench {
    static final double LOAD_SHARE = 0.55;
    static final String MODEL_LATENCY = "fixed:0";
    private static final double MIN_RATE = 5;

    /**
     * What the stage's phases last: the warm-up (until {@code warmAnswers} were answered, at most {@code warmup}),
     * each probe round (the first at half the warm-up's rate, the others at the rate the previous round chose),
     * settling at the chosen rate, the measured window, the rest after everything was answered; at most
     * {@code maxSettle} more for a backlog to drain before a window opens.
     */
    private record Phases(
            long warmAnswers,
            Duration warmup,
            int probeRounds,
            Duration probe,
            Duration settle,
            Duration measure,
            Duration rest,
            Duration maxSettle) {
        static Phases of(boolean quick) {
            return quick
                    ? new Phases(
                            1000,
                            Duration.ofSeconds(20),
                            2,
                            Duration.ofSeconds(5),
                            Duration.ofSeconds(4),
                            Duration.ofSeconds(10),
                            Duration.ofSeconds(2),
                            Duration.ofSeconds(15))
                    : new Phases(
                            6000,
                            Duration.ofSeconds(120),
                            2,
                            Duration.ofSeconds(10),
                            Duration.ofSeconds(15),
                            Duration.ofSeconds(60),
                            Duration.ofSeconds(5),
                            Duration.ofSeconds(60));
        }
    }

    /**
     * One process over the measured window: CPU ms per answered message, cores used, cores at rest (after the
     * load, everything answered); {@code settles}: counted as Settle's.
     */
    record Share(
            String process,
            boolean settles,
            double msPerAnswer,
            double jitMsPerAnswer,
            double cores,
            double restCores) {}

    record Result(
            double offered,
            double capacity,
            long answered,
            double seconds,
            List<Share> shares,
            double statementsPerAnswer,
            double machineCores,
            double otherCores,
            double windowCapacity,
            long acceptedInWindow,
            long warmAnswers,
            long unansweredAtRest,
            int cores,
            String load,
            long sent,
            long refused,
            long answeredAll,
            long failedReplies,
            long preparedHeld,
            long maxPrepared,
            Instant windowFrom,
            Instant windowTo,
            Path recording) {
        /**
         * The quickstart JVM's CPU samples over the measured window, or null when the run did not record it (its
         * recording is written as the quickstart exits, so this is read after the stage).
         */
        Profiler.Profile profile() {
            return recording == null || !Files.isRegularFile(recording)
                    ? null
                    : Profiler.summarize(PROFILE, recording, windowFrom, windowTo);
        }

        double answeredRate() {
            return answered / seconds;
        }

        /** CPU ms per answered message of Settle's processes together. */
        double settleMs() {
            return shares.stream()
                    .filter(Share::settles)
                    .mapToDouble(Share::msPerAnswer)
                    .sum();
        }

        /** Of {@link #settleMs()}, the JIT compiler threads' part. */
        double settleJitMs() {
            return shares.stream()
                    .filter(Share::settles)
                    .mapToDouble(Share::jitMsPerAnswer)
                    .sum();
        }
    }

    private EndToEndBench() {}

    static Result run(Infra infra, Bench.Options o) throws Exception {
        Phases ph = Phases.of(o.quick());
        Path data = Files.createDirectories(infra.home.resolve("quickstart"));
        String jdbcUrl = infra.database("endtoend");
        try (Model model = new Model(Model.Latency.parse(MODEL_LATENCY));
                Hooks hooks = new Hooks();
                Child kafka = new Child("kafka", "1g", Map.of())) {
            Map<String, String> env = new LinkedHashMap<>();
            env.put("SPRING_DATASOURCE_URL", jdbcUrl);
            env.put("SPRING_KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:" + kafka.port);
            env.put("SETTLE_API_KEY", Infra.API_KEY);
            env.put("SETTLE_WEBHOOK_SECRET", Infra.WEBHOOK_SECRET);
            env.put("SETTLE_WEBHOOK_URL", hooks.url());
            env.put("SETTLE_LLM_URL", model.baseUrl());
            // the per-tenant request rate (100/s by default) is a policy, not a capacity, as in every scenario
            env.put("SETTLE_LIMITS_RATE", "0");
            Bench.log("end to end: starting the quickstart's jar (broker on port " + kafka.port + ")");
            // the quickstart's JVM is recorded from its start; its profile counts the measured window's samples only
            Path jfr = o.profile() ? o.jfrDir().resolve(PROFILE + ".jfr") : null;
            try (QuickstartProcess settle = new QuickstartProcess(data, env, o.extra(), jfr)) {
                JdbcTemplate jdbc = new JdbcTemplate(new DriverManagerDataSource(jdbcUrl, "root", ""));
                Map<String, LongSupplier> settles = new LinkedHashMap<>();
                settles.put("quickstart JVM (ingest-api, debounce-worker, agent-worker)", settle.process::pid);
                settles.put("Kafka broker (its own JVM)", kafka.process::pid);
                settles.put("MariaDB server (`mariadbd`)", infra::dbPid);
                Map<String, LongSupplier> others = Map.of(
                        "bench JVM (load generator, model double, webhook receiver)",
                        () -> ProcessHandle.current().pid());
                Driver driver = new Driver(settle.base(), hooks);
                return measure(ph, driver, hooks, jdbc, settles, others, jfr);
            }
        }
    }

    /** The name of the quickstart JVM's recording and profile. */
    static final String PROFILE = "endtoend-quickstart";

    /** The system property that fixes the measured rate (messages/s) instead of probing for it. */
    static final String FIXED_RATE = "settle.bench.endtoend-rate";

    private static Result measure(
            Phases ph,
            Driver driver,
            Hooks hooks,
            JdbcTemplate jdbc,
            Map<String, LongSupplier> settles,
            Map<String, LongSupplier> others,
            Path recording)
            throws Exception {
        Map<String, LongSupplier> all = new LinkedHashMap<>(settles);
        all.putAll(others);
        int cores = Runtime.getRuntime().availableProcessors();

        double warmRate = driver.warm(ph.warmAnswers(), ph.warmup());
        Bench.log("end to end: warmed up at " + IngestBench.fmt(warmRate) + " answered/s");
        // each round estimates what the machine answers at the rate the previous one chose (fixed costs weigh less
        // per message at a higher rate, so a low rate underestimates it); a round at most doubles the rate
        double rate = Math.max(MIN_RATE, Math.round(warmRate / 2));
        double capacity = Double.NaN;
        // a fixed rate (-Dsettle.bench.endtoend-rate=N) skips the probe: A/B runs of one change compare at one rate
        double fixed = Double.parseDouble(System.getProperty(FIXED_RATE, "0"));
        if (fixed > 0) {
            rate = fixed;
            Bench.log("end to end: fixed rate " + rate + "/s, no probe");
        }
        for (int round = 0; fixed <= 0 && round < ph.probeRounds(); round++) {
            driver.settle(rate, Duration.ZERO, ph.maxSettle());
            Window probe = Window.open(all, hooks, jdbc, driver);
            driver.run(rate, ph.probe());
            Window.Closed p = probe.close();
            capacity = p.capacity(cores);
            if (p.answered() < 0.9 * p.accepted()) { // falling behind: what it answered is all it can
                capacity = Math.min(capacity, p.answered() / p.seconds());
            }
            double next = Math.max(MIN_RATE, Math.min(2 * rate, Math.round(LOAD_SHARE * capacity)));
            Bench.log("end to end: probe at " + rate + "/s answered " + p.answered() + " in "
                    + IngestBench.fmt(p.seconds()) + " s, " + IngestBench.fmt2(1000 * p.totalCpu() / p.answered())
                    + " CPU ms each (every process; JIT " + IngestBench.fmt2(1000 * p.jitCpu() / p.answered())
                    + "), other work " + IngestBench.fmt2(p.otherCores(cores))
                    + " cores: the machine answers ~" + Math.round(capacity) + "/s; next " + next + "/s");
            rate = next;
        }

        driver.settle(rate, ph.settle(), ph.maxSettle());
        String loadBefore = Bench.loadAverage();
        Instant windowFrom = Instant.now();
        Window window = Window.open(all, hooks, jdbc, driver);
        driver.run(rate, ph.measure());
        Window.Closed w = window.close();
        Instant windowTo = Instant.now();
        long preparedHeld =
                jdbc.query("SHOW GLOBAL STATUS LIKE 'Prepared_stmt_count'", rs -> rs.next() ? rs.getLong(2) : -1L);
        String load = loadBefore + " before, " + Bench.loadAverage() + " after";

        // everything sent is answered before the rest is measured
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (hooks.distinct(Hooks.REPLY) < driver.accepted.get() && System.nanoTime() < deadline) {
            Load.sleep(Duration.ofMillis(100));
        }
        long unansweredAtRest = driver.accepted.get() - hooks.distinct(Hooks.REPLY);
        Window rest = Window.open(all, hooks, jdbc, driver);
        Load.sleep(ph.rest());
        Window.Closed r = rest.close();

        List<Share> shares = new ArrayList<>();
        all.forEach((name, pid) -> shares.add(new Share(
                name,
                settles.containsKey(name),
                w.cpu().get(name)[0] * 1000 / Math.max(1, w.answered()),
                w.cpu().get(name)[1] * 1000 / Math.max(1, w.answered()),
                w.cpu().get(name)[0] / w.seconds(),
                r.cpu().get(name)[0] / r.seconds())));
        Result result = new Result(
                rate,
                capacity,
                w.answered(),
                w.seconds(),
                shares,
                w.statements() / (double) Math.max(1, w.answered()),
                w.machineCpu() / w.seconds(),
                w.otherCores(cores),
                w.capacity(cores),
                w.accepted(),
                ph.warmAnswers(),
                unansweredAtRest,
                cores,
                load,
                driver.sent.get(),
                driver.refused.get(),
                hooks.distinct(Hooks.REPLY),
                hooks.distinct("reply.failed"),
                preparedHeld,
                jdbc.queryForObject("SELECT @@GLOBAL.max_prepared_stmt_count", Long.class),
                windowFrom,
                windowTo,
                recording);
        Bench.log("end to end: " + w.answered() + " answered in " + IngestBench.fmt(w.seconds()) + " s ("
                + IngestBench.fmt(result.answeredRate()) + "/s of " + rate
                + "/s offered); Settle's CPU ms per answered "
                + "message " + IngestBench.fmt2(result.settleMs()) + " (goal ≤ 5)");
        shares.forEach(s -> Bench.log("end to end:   " + s.process() + ": " + IngestBench.fmt2(s.msPerAnswer())
                + " ms each (JIT " + IngestBench.fmt2(s.jitMsPerAnswer()) + "), " + IngestBench.fmt2(s.cores())
                + " cores, at rest " + IngestBench.fmt2(s.restCores())));
        Bench.log("end to end: machine " + IngestBench.fmt2(result.machineCores()) + " of " + cores
                + " cores busy (other work " + IngestBench.fmt2(result.otherCores()) + "); " + w.accepted()
                + " accepted in the window; " + unansweredAtRest + " unanswered at rest; load " + load + "; "
                + result.sent() + " sent, " + result.refused() + " refused, "
                + result.answeredAll() + " answered, " + result.failedReplies() + " failed replies");
        return result;
    }

    /** CPU of each process, webhooks received, statements and the whole machine's CPU from one instant on. */
    private record Window(
            long startNanos,
            Map<String, LongSupplier> processes,
            Map<String, double[]> cpu,
            Hooks hooks,
            long answered,
            JdbcTemplate jdbc,
            long questions,
            double machineCpu,
            Driver driver,
            long accepted) {
        record Closed(
                double seconds,
                Map<String, double[]> cpu,
                long answered,
                long statements,
                double machineCpu,
                long accepted) {
            double totalCpu() {
                return cpu.values().stream().mapToDouble(c -> c[0]).sum();
            }

            /** CPU seconds of the JIT compiler threads of every process here (a warm-up transient). */
            double jitCpu() {
                return cpu.values().stream().mapToDouble(c -> c[1]).sum();
            }

            /** Cores busy with work other than the processes measured here (other users of the machine). */
            double otherCores(int cores) {
                return Math.max(0, Math.min(cores, (machineCpu - totalCpu()) / seconds));
            }

            /**
             * Answered messages/s the cores that other work leaves free would give at this window's CPU per answered
             * message (every process here), JIT compilation left out: it ends once the JVMs are warm.
             */
            double capacity(int cores) {
                return (cores - otherCores(cores)) * Math.max(1, answered) / (totalCpu() - jitCpu());
            }
        }

        static Window open(Map<String, LongSupplier> processes, Hooks hooks, JdbcTemplate jdbc, Driver driver) {
            long questions = Infra.questions(jdbc);
            Map<String, double[]> cpu = new LinkedHashMap<>();
            long start = System.nanoTime();
            processes.forEach((name, pid) -> cpu.put(name, cpuOf(pid.getAsLong())));
            return new Window(
                    start,
                    processes,
                    cpu,
                    hooks,
                    hooks.distinct(Hooks.REPLY),
                    jdbc,
                    questions,
                    machineCpuSeconds(),
                    driver,
                    driver.accepted.get());
        }

        /** CPU seconds of a process so far: all its threads, and its JIT compiler threads. */
        private static double[] cpuOf(long pid) {
            return new double[] {Infra.cpuSeconds(pid), Infra.jitCpuSeconds(pid)};
        }

        Closed close() {
            Map<String, double[]> used = new LinkedHashMap<>();
            long end = System.nanoTime();
            processes.forEach((name, pid) -> {
                double[] now = cpuOf(pid.getAsLong());
                double[] then = cpu.get(name);
                // a compiler thread that ended took its CPU out of the threads' sum, not out of the process's
                used.put(name, new double[] {now[0] - then[0], Math.max(0, now[1] - then[1])});
            });
            long replies = hooks.distinct(Hooks.REPLY) - answered;
            double machine = machineCpuSeconds() - machineCpu;
            long statements = Infra.questions(jdbc) - questions;
            return new Closed(
                    (end - startNanos) / 1e9, used, replies, statements, machine, driver.accepted.get() - accepted);
        }
    }

    /** CPU seconds every core of the machine has been busy so far (all processes, {@code /proc/stat}). */
    static double machineCpuSeconds() {
        try {
            String[] f =
                    Files.readAllLines(Path.of("/proc/stat")).getFirst().trim().split("\\s+");
            long busy = 0;
            for (int i = 1; i < Math.min(f.length, 9); i++) {
                if (i != 4 && i != 5) { // idle, iowait
                    busy += Long.parseLong(f[i]);
                }
            }
            return busy / 100.0;
        } catch (Exception e) {
            return Double.NaN;
        }
    }

    /** The load generator: one message on a fresh session each, at a constant rate. */
    private static final class Driver {
        /** Messages in flight in a steady state: the debounce window (1.5 s by default) and the rest of a reply. */
        private static final double STEADY_BACKLOG_SECONDS = 3;
        /** Messages in flight during the warm-up: about 100/s through the debounce window at most. */
        private static final int WARM_IN_FLIGHT = 160;

        private final String base;
        private final Hooks hooks;
        final AtomicLong sent = new AtomicLong();
        final AtomicLong accepted = new AtomicLong();
        final AtomicLong refused = new AtomicLong();

        Driver(String base, Hooks hooks) {
            this.base = base;
            this.hooks = hooks;
        }

        /**
         * Runs at {@code rate} for {@code min}, then on until the messages accepted but not answered are no more than
         * a steady state holds (at most {@code max} longer).
         */
        void settle(double rate, Duration min, Duration max) throws InterruptedException {
            run(rate, min);
            long deadline = System.nanoTime() + max.toNanos();
            while (accepted.get() - hooks.distinct(Hooks.REPLY) > rate * STEADY_BACKLOG_SECONDS
                    && System.nanoTime() < deadline) {
                run(rate, Duration.ofSeconds(1));
            }
        }

        void run(double rate, Duration d) throws InterruptedException {
            Load.paced(rate, Math.round(rate * d.toNanos() / 1e9), i -> post(sent.getAndIncrement()));
        }

        /**
         * After a first reply, warms the JVMs up as fast as the answers come, never more than {@value #WARM_IN_FLIGHT} messages sent and
         * not yet answered (so a slow machine is not overrun), until {@code answers} more were answered or {@code max}
         * has passed; returns the answered rate.
         */
        double warm(long answers, Duration max) throws InterruptedException {
            // the first reply waits for the consumers' partitions and the topics' creation: not part of the warm-up
            post(sent.getAndIncrement());
            long firstDeadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
            while (hooks.distinct(Hooks.REPLY) == 0 && System.nanoTime() < firstDeadline) {
                Thread.sleep(20);
            }
            long start = System.nanoTime();
            long deadline = start + max.toNanos();
            long from = hooks.distinct(Hooks.REPLY);
            try (ExecutorService ex = Executors.newVirtualThreadPerTaskExecutor()) {
                while (hooks.distinct(Hooks.REPLY) - from < answers && System.nanoTime() < deadline) {
                    if (sent.get() - refused.get() - hooks.distinct(Hooks.REPLY) < WARM_IN_FLIGHT) {
                        long n = sent.getAndIncrement();
                        ex.execute(() -> post(n));
                    } else {
                        Thread.sleep(2);
                    }
                }
            }
            return (hooks.distinct(Hooks.REPLY) - from) / ((System.nanoTime() - start) / 1e9);
        }

        private void post(long n) {
            String sid = "e2e-" + n;
            int status = Load.post(base, sid, "sid=" + sid + " lunch 35");
            (status == 202 ? accepted : refused).incrementAndGet();
        }
    }
}
