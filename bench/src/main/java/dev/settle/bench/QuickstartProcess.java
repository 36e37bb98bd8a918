package dev.settle.bench;

import dev.settle.embedded.FreePort;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * The quickstart as its README runs it, {@code java -jar settle-quickstart.jar} with the JVM's default flags, in a
 * process of its own: ingest-api, debounce-worker and agent-worker in one JVM ({@code SettleLauncher}), configured
 * only through the quickstart's environment variables, on free ports. Ready once it prints its banner; its console
 * lines at WARN and above are echoed. Stopped as a user stops it: SIGTERM, its shutdown hook. With a recording file,
 * the JVM runs under the Flight Recorder (settings {@code profile}) from its start and writes the file as it exits.
 */
final class QuickstartProcess implements AutoCloseable {
    private static final String BANNER = "Settle is running at";

    final Process process;
    final int port;

    /**
     * @param env the quickstart's variables (database, broker, model, webhook, …) over the free ports chosen here
     * @param properties system properties (the bench's {@code --set}), which override the environment
     * @param jfr        the Flight Recorder's file, or null to run without it
     */
    QuickstartProcess(Path dataDir, Map<String, String> env, Map<String, Object> properties, Path jfr)
            throws Exception {
        Path jar = jar();
        if (!Files.isRegularFile(jar)) {
            throw new IllegalStateException(
                    "no quickstart jar at " + jar + " (build it with `mvn -B -pl bench -am -DskipTests package`)");
        }
        port = FreePort.find();
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        if (jfr != null) {
            cmd.add("-XX:FlightRecorderOptions:stackdepth=256");
            cmd.add("-XX:StartFlightRecording=filename=" + jfr.toAbsolutePath() + ",settings=profile,dumponexit=true");
        }
        properties.forEach((k, v) -> cmd.add("-D" + k + "=" + v));
        cmd.add("-jar");
        cmd.add(jar.toString());
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        Map<String, String> e = pb.environment();
        e.put("SETTLE_DATADIR", dataDir.toString());
        e.put("SERVER_PORT", Integer.toString(port));
        e.put("SETTLE_MANAGEMENT_PORT", Integer.toString(FreePort.find()));
        e.put("SETTLE_DEBOUNCE_PORT", Integer.toString(FreePort.find()));
        e.put("SETTLE_AGENT_PORT", Integer.toString(FreePort.find()));
        e.putAll(env);
        process = pb.start();
        CountDownLatch ready = new CountDownLatch(1);
        Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream()))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.contains(BANNER)) {
                        ready.countDown();
                    } else if (line.contains("ERROR") || line.contains("Exception") || line.contains("WARN")) {
                        System.out.println("[quickstart] " + line);
                    }
                }
            } catch (Exception ignored) {
                // the process ended
            }
        });
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(300);
        while (!ready.await(200, TimeUnit.MILLISECONDS)) {
            if (!process.isAlive() || System.nanoTime() > deadline) {
                process.destroyForcibly();
                throw new IllegalStateException("the quickstart did not start (see its output above)");
            }
        }
    }

    /** The quickstart's jar, copied beside the bench's own by the build ({@code target/quickstart/}). */
    static Path jar() throws Exception {
        Path self = Path.of(QuickstartProcess.class
                .getProtectionDomain()
                .getCodeSource()
                .getLocation()
                .toURI());
        return self.getParent().resolve("quickstart").resolve("settle-quickstart.jar");
    }

    String base() {
        return "http://127.0.0.1:" + port;
    }

    /** CPU seconds (user + system) the quickstart's JVM has used so far. */
    double cpuSeconds() {
        return Infra.cpuSeconds(process.pid());
    }

    @Override
    public void close() throws Exception {
        process.destroy();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
    }
}
