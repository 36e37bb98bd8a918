package dev.settle.e2e;

import dev.settle.agent.AgentWorkerApplication;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * An agent worker in its own JVM, so that a test can crash it for real ({@code kill -9}): no shutdown hook,
 * no finally block, no last write.
 */
final class AgentProcess implements AutoCloseable {
    private final Process process;
    private final String user;
    final Path log;

    AgentProcess(Map<String, Object> properties) throws IOException {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = new ArrayList<>(List.of(
                java,
                "-Xmx512m",
                "-cp",
                System.getProperty("java.class.path"),
                AgentWorkerApplication.class.getName()));
        properties.forEach((k, v) -> command.add("--" + k + "=" + v));
        user = String.valueOf(properties.getOrDefault("spring.datasource.username", "root"));
        Files.createDirectories(Path.of("target"));
        log = Files.createTempFile(Path.of("target"), "agent-process-", ".log");
        process = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
    }

    boolean logContains(String text) {
        try {
            return Files.readString(log).contains(text);
        } catch (IOException e) {
            return false;
        }
    }

    /** SIGSTOP: the whole JVM freezes, heartbeats included, as in a long GC pause or a stalled VM. */
    void pause() throws IOException, InterruptedException {
        signal("STOP");
    }

    /** SIGCONT. */
    void resume() throws IOException, InterruptedException {
        signal("CONT");
    }

    /** The user its database connections log in as. */
    String user() {
        return user;
    }

    boolean alive() {
        return process.isAlive();
    }

    private void signal(String name) throws IOException, InterruptedException {
        new ProcessBuilder("kill", "-" + name, Long.toString(process.pid()))
                .inheritIO()
                .start()
                .waitFor();
    }

    /** SIGKILL. */
    void kill() throws InterruptedException {
        process.destroyForcibly();
        process.waitFor();
    }

    @Override
    public void close() throws InterruptedException {
        if (process.isAlive()) {
            kill();
        }
    }
}
