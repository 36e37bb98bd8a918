package dev.settle.ingest.perf;

import dev.settle.ingest.IngestApp;
import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIfSystemProperty;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Measures the CPU the ingest JVM spends per accepted {@code POST /v1/sessions/{id}/messages}. Not a test (no
 * figure is asserted); run it by hand:
 *
 * <pre>
 * mvn -B -q -o -pl ingest-api -am test -Dtest=AcceptCpuProbe -Dsurefire.failIfNoSpecifiedTests=false \
 *     -Dsettle.probe=true [-Dsettle.probe.accepts=6000 -Dsettle.probe.warmup=6000 -Dsettle.probe.clients=8 \
 *     -Dsettle.probe.jfr=target/accept.jfr -Dsettle.probe.props=key=value,key=value]
 * </pre>
 *
 * The ingest API runs alone in a child JVM ({@link AcceptCpuServer}) on the shared MariaDB (its own process) and
 * broker (this JVM), so the child's process CPU (all its threads: Tomcat, JIT, GC, Kafka producer, Hikari) is the
 * server's cost and nothing else. After a warm-up, closed-loop clients send the measured accepts, spread over
 * sessions so that no session reaches its unanswered limit; the tenant request rate is on, set high enough never
 * to refuse. The child's idle CPU over as long a pause is reported beside it. With {@code settle.probe.jfr} the
 * measured phase is followed by {@code settle.probe.jfr-accepts} more, recorded (JFR "profile" settings) into that
 * file.
 */
@EnabledIfSystemProperty(named = "settle.probe", matches = "true")
class AcceptCpuProbe {
    static final int ACCEPTS = Integer.getInteger("settle.probe.accepts", 6000);
    static final int WARMUP = Integer.getInteger("settle.probe.warmup", 10000);
    static final int JFR_ACCEPTS = Integer.getInteger("settle.probe.jfr-accepts", 4000);
    static final int CLIENTS = Integer.getInteger("settle.probe.clients", 8);
    static final int SESSIONS = 3000;

    @Test
    void cpu_per_accept() throws Exception {
        String jdbc = SharedInfra.newDatabase("cpuprobe");
        String kafka = SharedInfra.kafkaBootstrap();
        String javaBin = Path.of(System.getProperty("java.home"), "bin", "java").toString();
        List<String> cmd = new ArrayList<>(List.of(
                javaBin,
                "-Xmx512m",
                "-XX:FlightRecorderOptions:stackdepth=256",
                "-cp",
                System.getProperty("java.class.path"),
                AcceptCpuServer.class.getName(),
                jdbc,
                kafka,
                "settle.limits.rate=1000000",
                "settle.limits.burst=1000000",
                "logging.level.root=WARN"));
        // further properties of the server for an A/B run, e.g. -Dsettle.probe.props=a.b=1,c.d=2
        String more = System.getProperty("settle.probe.props", "");
        if (!more.isBlank()) {
            cmd.addAll(List.of(more.split(",")));
        }
        Process server = new ProcessBuilder(cmd)
                .redirectError(ProcessBuilder.Redirect.INHERIT)
                .start();
        try {
            BufferedReader out =
                    new BufferedReader(new InputStreamReader(server.getInputStream(), StandardCharsets.UTF_8));
            String base = null;
            for (String line; (line = out.readLine()) != null; ) {
                if (line.startsWith("READY ")) {
                    base = line.substring(6);
                    break;
                }
            }
            Thread.ofPlatform().daemon().start(() -> out.lines().forEach(System.out::println));
            HttpClient http = HttpClient.newBuilder()
                    .connectTimeout(Duration.ofSeconds(5))
                    .build();
            long pid = server.pid();

            run(http, base, "w", WARMUP);
            Thread.sleep(2000);
            long idle0 = cpuNanos(server);
            long idleStart = System.nanoTime();
            Thread.sleep(5000);
            double idleMsPerSec = (cpuNanos(server) - idle0) / 1e6 / ((System.nanoTime() - idleStart) / 1e9);

            double load = loadAverage();
            Map<String, Long> threads0 = threadTicks(pid);
            long cpu0 = cpuNanos(server);
            long t0 = System.nanoTime();
            run(http, base, "m", ACCEPTS);
            long wall = System.nanoTime() - t0;
            long cpu = cpuNanos(server) - cpu0;
            Map<String, Long> threads1 = threadTicks(pid);
            String jfr = System.getProperty("settle.probe.jfr");
            if (jfr != null) {
                // a phase of its own: starting a recording deoptimises and recompiles, which the measured phase
                // must not pay for
                jcmd(pid, "JFR.start", "name=probe", "settings=profile");
                run(http, base, "j", JFR_ACCEPTS);
                jcmd(pid, "JFR.stop", "name=probe", "filename=" + Path.of(jfr).toAbsolutePath());
            }
            double seconds = wall / 1e9;
            double perAccept = cpu / 1e6 / ACCEPTS;
            double idlePerAccept = idleMsPerSec * seconds / ACCEPTS;
            String report = String.format(
                    "PROBE accepts=%d clients=%d wall=%.1fs rate=%.0f/s serverCpu=%.0fms perAccept=%.3fms"
                            + " idleCpu=%.1fms/s (%.3fms per accept at this rate) perAcceptMinusIdle=%.3fms"
                            + " load1=%.2f%n",
                    ACCEPTS,
                    CLIENTS,
                    seconds,
                    ACCEPTS / seconds,
                    cpu / 1e6,
                    perAccept,
                    idleMsPerSec,
                    idlePerAccept,
                    perAccept - idlePerAccept,
                    load);
            StringBuilder byThread = new StringBuilder("PROBE by thread (ms per accept):");
            threads1.entrySet().stream()
                    .map(e -> Map.entry(e.getKey(), e.getValue() - threads0.getOrDefault(e.getKey(), 0L)))
                    .filter(e -> e.getValue() > 0)
                    .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                    .forEach(e -> byThread.append(
                            String.format(" %s=%.3f", e.getKey(), e.getValue() * 1000.0 / TICKS_PER_SECOND / ACCEPTS)));
            report += byThread + System.lineSeparator();
            System.out.print(report);
            Files.writeString(
                    Path.of("target", "accept-cpu-probe.txt"),
                    report,
                    java.nio.file.StandardOpenOption.CREATE,
                    java.nio.file.StandardOpenOption.APPEND);
        } finally {
            try (OutputStream stdin = server.getOutputStream()) {
                stdin.flush();
            }
            if (!server.waitFor(30, java.util.concurrent.TimeUnit.SECONDS)) {
                server.destroyForcibly();
            }
        }
    }

    /** {@code count} accepts from {@link #CLIENTS} closed-loop clients over {@link #SESSIONS} sessions. */
    static void run(HttpClient http, String base, String prefix, int count) throws Exception {
        AtomicInteger next = new AtomicInteger();
        try (ExecutorService clients = Executors.newFixedThreadPool(CLIENTS)) {
            List<Future<?>> done = new ArrayList<>();
            for (int c = 0; c < CLIENTS; c++) {
                done.add(clients.submit(() -> {
                    for (int i; (i = next.getAndIncrement()) < count; ) {
                        String session = prefix + "-" + (i % SESSIONS);
                        HttpResponse<String> r = http.send(
                                HttpRequest.newBuilder(URI.create(base + "/v1/sessions/" + session + "/messages"))
                                        .header("Content-Type", "application/json")
                                        .header("Authorization", "Bearer " + IngestApp.KEY)
                                        .POST(HttpRequest.BodyPublishers.ofString(
                                                "{\"text\":\"message " + i + " of the probe\"}"))
                                        .build(),
                                HttpResponse.BodyHandlers.ofString());
                        assertEquals(202, r.statusCode(), r.body());
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get();
            }
        }
    }

    static final long TICKS_PER_SECOND = 100;

    /**
     * CPU ticks (user + system) of each kind of thread of the process, from {@code /proc/<pid>/task/<tid>/stat}:
     * threads are grouped by name without digits (the carriers of the virtual threads, the JIT compilers, GC, ...).
     */
    static Map<String, Long> threadTicks(long pid) throws java.io.IOException {
        Map<String, Long> ticks = new java.util.TreeMap<>();
        try (var tasks = Files.list(Path.of("/proc", Long.toString(pid), "task"))) {
            for (Path task : tasks.toList()) {
                String stat;
                try {
                    stat = Files.readString(task.resolve("stat"));
                } catch (java.io.IOException gone) {
                    continue;
                }
                String name = stat.substring(stat.indexOf('(') + 1, stat.lastIndexOf(')'))
                        .replaceAll("[0-9]+", "N");
                String[] fields = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
                long t = Long.parseLong(fields[11]) + Long.parseLong(fields[12]);
                ticks.merge(name, t, Long::sum);
            }
        }
        return ticks;
    }

    static long cpuNanos(Process p) {
        return p.info().totalCpuDuration().orElseThrow().toNanos();
    }

    static double loadAverage() {
        return java.lang.management.ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage();
    }

    static void jcmd(long pid, String... args) throws Exception {
        List<String> cmd = new ArrayList<>();
        cmd.add(Path.of(System.getProperty("java.home"), "bin", "jcmd").toString());
        cmd.add(Long.toString(pid));
        cmd.addAll(List.of(args));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new IllegalStateException(String.join(" ", cmd) + ": " + out);
        }
    }
}
