package dev.settle.bench;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * {@code java -jar bench/target/settle-bench.jar [--quick]}: runs Settle's whole pipeline on the embedded
 * infrastructure against the HTTP model double and writes {@code docs/PERFORMANCE.md} and {@code docs/perf/*.png}.
 *
 * <p>Options: {@code --quick} (small sizes, under 3 minutes), {@code --model-latency uniform:MIN_MS:MAX_MS|fixed:MS}
 * (default uniform:2000:6000), {@code --only ingest,streams,timers,pipeline,strategies,inflight,endtoend}, {@code --set key=value} (a property
 * every application gets, child JVMs included, repeatable), {@code --no-profile}, {@code --out DIR} (default docs),
 * {@code --inflight-big LEVEL:MODEL_MS} (the in-flight figure's large level; the full run's is 10000:60000, the quick
 * run has none), {@code --inflight-levels LIST|none} (the in-flight figure's levels against the 5 s model), {@code --inflight-warmup
 * SECONDS} (its unmeasured warm-up at 50 turns/s; 12 in the full run).
 */
public final class Bench {
    private static final long STARTED = System.nanoTime();

    record Options(
            boolean quick,
            Model.Latency latency,
            Path out,
            Path jfrDir,
            boolean profile,
            Set<String> only,
            Map<String, Object> extra,
            Duration warmup,
            int clients,
            Duration stage,
            double[] ladder,
            Duration ladderStage,
            int ingestSessions,
            int timers,
            int timedTimers,
            Duration timerPeriod,
            Duration window,
            Duration maxWait,
            int overheadSessions,
            double overheadRate,
            int strategySessions,
            int interruptSessions,
            int warmBursts,
            int measuredBursts,
            int burstSize,
            long gapMinMs,
            long gapMaxMs,
            int[] inflightLevels,
            Duration inflightHold,
            Duration inflightDrain,
            long inflightModelMs,
            String agentHeap,
            Duration inflightWarmup,
            int inflightBigLevel,
            long inflightBigModelMs) {

        boolean runs(String scenario) {
            return only.isEmpty() || only.contains(scenario);
        }

        static Options parse(String[] args) {
            boolean quick = false;
            String latency = "uniform:2000:6000";
            Path out = Path.of("docs");
            boolean profile = true;
            Set<String> only = Set.of();
            Map<String, Object> extra = new LinkedHashMap<>();
            String big = null;
            String levels = null;
            Duration warm = null;
            for (int i = 0; i < args.length; i++) {
                switch (args[i]) {
                    case "--quick" -> quick = true;
                    case "--model-latency" -> latency = args[++i];
                    case "--out" -> out = Path.of(args[++i]);
                    case "--no-profile" -> profile = false;
                    case "--inflight-big" -> big = args[++i];
                    case "--inflight-levels" -> levels = args[++i];
                    case "--inflight-warmup" -> warm = Duration.ofSeconds(Long.parseLong(args[++i]));
                    case "--only" -> only = Set.of(args[++i].split(","));
                    case "--set" -> {
                        String kv = args[++i];
                        extra.put(kv.substring(0, kv.indexOf('=')), kv.substring(kv.indexOf('=') + 1));
                    }
                    default ->
                        throw new IllegalArgumentException(
                                "unknown option " + args[i]
                                        + " (--quick, --model-latency SPEC, --out DIR, --no-profile, --only LIST, --set K=V,"
                                        + " --inflight-big LEVEL:MODEL_MS, --inflight-levels LIST|none, --inflight-warmup SECONDS)");
                }
            }
            Path jfr = Path.of("bench", "target", "jfr");
            Duration window = Duration.ofMillis(1500);
            Duration maxWait = Duration.ofSeconds(10);
            Model.Latency l = Model.Latency.parse(latency);
            Options parsed = parse(quick, l, out, jfr, profile, only, extra, window, maxWait);
            int[] small = levels == null
                    ? parsed.inflightLevels()
                    : levels.equals("none")
                            ? new int[0]
                            : Arrays.stream(levels.split(","))
                                    .mapToInt(Integer::parseInt)
                                    .toArray();
            Duration warmup = warm == null ? parsed.inflightWarmup() : warm;
            if (big == null) {
                return parsed.withInflight(small, parsed.inflightBigLevel(), parsed.inflightBigModelMs(), warmup);
            }
            String[] lm = big.split(":");
            return parsed.withInflight(small, Integer.parseInt(lm[0]), Long.parseLong(lm[1]), warmup);
        }

        /**
         * The same options with the in-flight figure's levels (5 s model) set to {@code levels}, its large level to
         * {@code level} turns against a {@code modelMs} model, and its warm-up to {@code warm} (at 50 turns/s).
         */
        Options withInflight(int[] levels, int level, long modelMs, Duration warm) {
            return new Options(
                    quick,
                    latency,
                    out,
                    jfrDir,
                    profile,
                    only,
                    extra,
                    warmup,
                    clients,
                    stage,
                    ladder,
                    ladderStage,
                    ingestSessions,
                    timers,
                    timedTimers,
                    timerPeriod,
                    window,
                    maxWait,
                    overheadSessions,
                    overheadRate,
                    strategySessions,
                    interruptSessions,
                    warmBursts,
                    measuredBursts,
                    burstSize,
                    gapMinMs,
                    gapMaxMs,
                    levels,
                    inflightHold,
                    inflightDrain,
                    inflightModelMs,
                    agentHeap,
                    warm,
                    level,
                    modelMs);
        }

        private static Options parse(
                boolean quick,
                Model.Latency l,
                Path out,
                Path jfr,
                boolean profile,
                Set<String> only,
                Map<String, Object> extra,
                Duration window,
                Duration maxWait) {
            if (quick) {
                return new Options(
                        true,
                        l,
                        out,
                        jfr,
                        profile,
                        only,
                        extra,
                        Duration.ofSeconds(6),
                        64,
                        Duration.ofSeconds(5),
                        new double[] {0.25, 0.5, 0.75, 1.0},
                        Duration.ofSeconds(2),
                        2000,
                        100_000,
                        1000,
                        Duration.ofSeconds(10),
                        window,
                        maxWait,
                        100,
                        10,
                        6,
                        10,
                        3,
                        2,
                        4,
                        300,
                        2000,
                        new int[] {500, 2000},
                        Duration.ofSeconds(6),
                        Duration.ofSeconds(20),
                        5000,
                        "512m",
                        Duration.ofSeconds(4),
                        0,
                        60_000);
            }
            return new Options(
                    false,
                    l,
                    out,
                    jfr,
                    profile,
                    only,
                    extra,
                    Duration.ofSeconds(20),
                    64,
                    Duration.ofSeconds(15),
                    new double[] {0.25, 0.5, 0.75, 1.0, 1.25},
                    Duration.ofSeconds(10),
                    10_000,
                    1_000_000,
                    6000,
                    Duration.ofSeconds(60),
                    window,
                    maxWait,
                    1200,
                    20,
                    20,
                    20,
                    3,
                    3,
                    4,
                    300,
                    2000,
                    new int[] {500, 750, 1000, 2000},
                    Duration.ofSeconds(15),
                    Duration.ofSeconds(45),
                    5000,
                    "512m",
                    Duration.ofSeconds(12),
                    10_000,
                    60_000);
        }
    }

    /** Everything measured, for the report. */
    static final class Run {
        Options options;
        Instant startedAt;
        double secondsTaken;
        List<String> loads = new ArrayList<>();
        IngestBench.Result ingest;
        StreamBench.Result streams;
        TimerBench.Result timers;
        PipelineBench.Result pipeline;
        StrategyBench.Result strategies;
        InFlightBench.Result inflight;
        EndToEndBench.Result endToEnd;
    }

    private Bench() {}

    public static void main(String[] args) throws Exception {
        System.setProperty("java.awt.headless", "true");
        Options o = Options.parse(args);
        Files.createDirectories(o.jfrDir());
        Files.createDirectories(o.out().resolve("perf"));
        Run run = new Run();
        run.options = o;
        run.startedAt = Instant.now();
        log((o.quick() ? "quick" : "full") + " run; model latency "
                + o.latency().describe() + "; load " + loadAverage());
        Path home = Files.createTempDirectory("settle-bench-");
        try (Infra infra = new Infra(home, o.extra())) {
            if (o.runs("ingest")) {
                run.loads.add("before ingest: " + loadAverage());
                run.ingest = IngestBench.run(infra, o);
            }
            if (o.runs("streams")) {
                run.loads.add("before streams: " + loadAverage());
                run.streams = StreamBench.run(infra, o);
            }
            if (o.runs("timers")) {
                run.loads.add("before timers: " + loadAverage());
                run.timers = TimerBench.run(infra, o);
            }
            if (o.runs("pipeline")) {
                run.loads.add("before pipeline: " + loadAverage());
                run.pipeline = PipelineBench.run(infra, o);
            }
            if (o.runs("strategies")) {
                run.loads.add("before strategies: " + loadAverage());
                run.strategies = StrategyBench.run(infra, o);
            }
            if (o.runs("inflight")) {
                run.loads.add("before in-flight: " + loadAverage());
                run.inflight = InFlightBench.run(infra, o);
            }
            if (o.runs("endtoend")) {
                run.loads.add("before end to end: " + loadAverage());
                run.endToEnd = EndToEndBench.run(infra, o);
            }
            run.loads.add("at the end: " + loadAverage());
        }
        run.secondsTaken = (System.nanoTime() - STARTED) / 1e9;
        Path doc = Report.write(run);
        log("wrote " + doc + " in " + Math.round(run.secondsTaken) + " s");
        System.exit(0);
    }

    static String loadAverage() {
        try {
            return String.join(
                    " ",
                    Arrays.copyOf(
                            Files.readString(Path.of("/proc/loadavg")).trim().split(" "), 3));
        } catch (Exception e) {
            return "?";
        }
    }

    static void log(String message) {
        System.out.printf("[bench %5.1fs] %s%n", (System.nanoTime() - STARTED) / 1e9, message);
    }
}
