package dev.settle.e2e;

import tools.jackson.databind.json.JsonMapper;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.awaitility.Awaitility.await;

/**
 * The chaos run's users in a JVM of their own: {@link ChaosWorkload} over HTTP ({@link HttpApi}), so that what the
 * checker judges of a POST's latency is the service's, not the clients' own wait for a carrier in the JVM that runs
 * ingest-api and the debounce workers. Both JVMs time POSTs and faults with {@link System#nanoTime()}, which on Linux
 * reads the one monotonic clock of the machine ({@code CLOCK_MONOTONIC}); {@link #run} checks that they agree.
 *
 * <p>The child warms its own client up (two rounds of a POST per user, to sessions of their own), says
 * {@value #READY}, waits for {@value #GO} on its standard input, runs the workload and writes its
 * {@link ChaosWorkload.Results} as JSON.
 */
final class ChaosClients implements AutoCloseable {
    static final String READY = "chaos clients ready";
    static final String GO = "go";
    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** What the child writes: when it was told to go (its nanoTime) and what the run left. */
    record Outcome(long goNanos, ChaosWorkload.Results results) {}

    private final Process process;
    private final Path log;
    private final Path out;

    private ChaosClients(Process process, Path log, Path out) {
        this.process = process;
        this.log = log;
        this.out = out;
    }

    /** Starts the clients' JVM and waits until it has warmed up. */
    static ChaosClients start(String base, String key, int sessions, int bursts, long seed, Duration window)
            throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        Files.createDirectories(Path.of("target"));
        Path log = Files.createTempFile(Path.of("target"), "chaos-clients-", ".log");
        Path out = Files.createTempFile(Path.of("target"), "chaos-clients-", ".json");
        Process process = new ProcessBuilder(List.of(
                        java,
                        "-Xmx512m",
                        "-cp",
                        System.getProperty("java.class.path"),
                        ChaosClients.class.getName(),
                        base,
                        key,
                        Integer.toString(sessions),
                        Integer.toString(bursts),
                        Long.toString(seed),
                        Long.toString(window.toMillis()),
                        out.toString()))
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        ChaosClients clients = new ChaosClients(process, log, out);
        await("the clients' JVM warmed up")
                .atMost(Duration.ofSeconds(120))
                .pollInterval(Duration.ofMillis(50))
                .until(() -> {
                    if (!process.isAlive()) {
                        throw new AssertionError("the clients' JVM ended before it was ready:\n" + clients.log());
                    }
                    return clients.log().contains(READY);
                });
        return clients;
    }

    /**
     * Runs the workload to its end.
     *
     * @throws AssertionError the first POST the clients could not get accepted, with its session's state
     */
    ChaosWorkload run(SettleSystem settle) throws IOException, InterruptedException {
        long before = System.nanoTime();
        OutputStream in = process.getOutputStream();
        in.write((GO + "\n").getBytes(StandardCharsets.UTF_8));
        in.flush();
        int exit = process.waitFor();
        long after = System.nanoTime();
        if (exit != 0) {
            throw new AssertionError("the clients' JVM exited with " + exit + ":\n" + log());
        }
        Outcome outcome = JSON.readValue(Files.readString(out), Outcome.class);
        if (outcome.goNanos() < before || outcome.goNanos() > after) {
            throw new AssertionError("the clients' JVM does not share this JVM's System.nanoTime clock: told to go at "
                    + outcome.goNanos() + ", not within " + before + ".." + after);
        }
        ChaosWorkload.Results r = outcome.results();
        if (r.failure() != null) {
            throw new AssertionError(
                    r.failure() + (r.failedSession() == null ? "" : "\n" + settle.sessionState(r.failedSession())));
        }
        return ChaosWorkload.of(r);
    }

    private String log() {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return "(log unreadable: " + e + ")";
        }
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            process.destroyForcibly();
            process.waitFor();
        }
    }

    /** The clients' JVM: {@code BASE KEY SESSIONS BURSTS SEED WINDOW_MS OUT}. */
    public static void main(String[] args) throws Exception {
        HttpApi api = new HttpApi(args[0], args[1]);
        int sessions = Integer.parseInt(args[2]);
        int bursts = Integer.parseInt(args[3]);
        long seed = Long.parseLong(args[4]);
        Duration window = Duration.ofMillis(Long.parseLong(args[5]));
        Path out = Path.of(args[6]);
        warmUp(api, sessions);
        System.out.println(READY);
        System.out.flush();
        String told = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8)).readLine();
        if (!GO.equals(told)) {
            System.out.println("not told to go (" + told + "): nothing run");
            System.exit(2);
        }
        long go = System.nanoTime();
        ChaosWorkload workload = new ChaosWorkload(api, window);
        String failure = null;
        String failedSession = null;
        try {
            workload.run(sessions, bursts, seed);
        } catch (Exception | AssertionError e) {
            Throwable cause =
                    e instanceof java.util.concurrent.ExecutionException && e.getCause() != null ? e.getCause() : e;
            failure = cause.toString();
            failedSession = cause instanceof ChaosWorkload.Refused refused ? refused.sessionId : null;
            cause.printStackTrace(System.out);
        }
        Files.writeString(out, JSON.writeValueAsString(new Outcome(go, workload.results(failure, failedSession))));
        System.exit(0);
    }

    /**
     * Two rounds of as many POSTs at once as the run has users, to sessions of their own, before the run's clock
     * starts: the first requests of a fresh client (class loading, JIT, connections) and of a fresh service are slow
     * for reasons that are neither a turn nor Kafka, and the latency checks judge Settle, not a cold start.
     */
    private static void warmUp(HttpApi api, int users) throws Exception {
        for (int round = 0; round < 2; round++) {
            try (ExecutorService clients = Executors.newVirtualThreadPerTaskExecutor()) {
                List<Future<ChaosWorkload.ApiResult>> posts = new ArrayList<>();
                for (int i = 0; i < users; i++) {
                    String session = "warm-up-" + i;
                    posts.add(clients.submit(() -> api.post(session, "warming up", null)));
                }
                for (Future<ChaosWorkload.ApiResult> f : posts) {
                    ChaosWorkload.ApiResult r = f.get();
                    if (r.status() != 202) {
                        throw new AssertionError("warm-up POST answered " + r.status() + ": " + r.body());
                    }
                }
            }
        }
    }
}
