package dev.settle.e2e;

import dev.settle.quickstart.Quickstart;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;

/** The quickstart in its own JVM, as a user runs it: configured by environment, stopped by a signal. */
final class QuickstartProcess implements AutoCloseable {
    static final String BANNER = "Settle is running at ";
    private final Process process;
    final Path log;

    /**
     * The quickstart from the test classpath.
     *
     * @param tmp its java.io.tmpdir, so that the test can delete what a killed quickstart leaves there
     */
    QuickstartProcess(Map<String, String> env, Path log, Path tmp) throws IOException {
        this(
                // the JDK running this test: the one the Maven toolchain selected (21+)
                ProcessHandle.current().info().command().orElse("java"),
                List.of("-cp", System.getProperty("java.class.path"), Quickstart.class.getName()),
                env,
                log,
                tmp);
    }

    /** The quickstart as the README runs it: {@code java -jar settle-quickstart.jar}, with {@code java} as given. */
    static QuickstartProcess jar(String java, Path jar, Map<String, String> env, Path log, Path tmp)
            throws IOException {
        return new QuickstartProcess(java, List.of("-jar", jar.toString()), env, log, tmp);
    }

    /** @param launch what follows the JVM options: a class path and main class, or {@code -jar} and a jar */
    private QuickstartProcess(String java, List<String> launch, Map<String, String> env, Path log, Path tmp)
            throws IOException {
        List<String> command = new ArrayList<>(List.of(java, "-Xmx768m", "-Djava.io.tmpdir=" + tmp));
        command.addAll(launch);
        ProcessBuilder builder = new ProcessBuilder(command);
        // only what the test chooses: no SETTLE_* or SPRING_* inherited from whoever runs the build
        builder.environment()
                .keySet()
                .removeIf(k -> k.startsWith("SETTLE_") || k.startsWith("SPRING_") || k.startsWith("SERVER_"));
        builder.environment().putAll(env);
        this.log = log;
        process = builder.redirectErrorStream(true).redirectOutput(log.toFile()).start();
    }

    String output() {
        try {
            return Files.readString(log);
        } catch (IOException e) {
            return "";
        }
    }

    void awaitBanner(Duration timeout) {
        await("the quickstart's banner in " + log)
                .atMost(timeout)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> {
                    if (!process.isAlive()) {
                        throw new AssertionError("the quickstart exited with " + process.exitValue() + ", see " + log);
                    }
                    return output().contains(BANNER);
                });
    }

    /** SIGKILL: no shutdown hook, no last write; its MariaDB server keeps running, orphaned. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor();
    }

    /** SIGTERM, as Ctrl-C or {@code docker stop}; returns the exit code, or null if still running after the timeout. */
    Integer terminate(Duration timeout) throws InterruptedException {
        process.destroy();
        return process.waitFor(timeout.toMillis(), TimeUnit.MILLISECONDS) ? process.exitValue() : null;
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            kill();
        }
    }
}
