package dev.settle.testsupport;

import dev.settle.embedded.BrokerReadiness;
import dev.settle.embedded.EmbeddedKafka;
import dev.settle.embedded.FreePort;
import org.apache.kafka.common.Uuid;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * A real single-node KRaft Kafka (combined broker and controller, Kafka's own {@code kafka.Kafka} main) in a
 * child JVM started with this JVM's java binary and classpath, on fixed ports and a persistent log directory:
 * unlike {@link EmbeddedKafka} it can be killed ({@code SIGKILL}) or stopped and restarted on the same port,
 * keeping its topics and committed offsets.
 *
 * <p>The storage is formatted once ({@code kafka.tools.StorageTool format}, also in a child JVM: the tool
 * calls {@code System.exit}). The broker session timeout is 2 s (default 9 s) so that a broker restarted after
 * a {@code SIGKILL} is not refused by its own controller as a duplicate registration for long.
 */
public final class KafkaBrokerProcess implements AutoCloseable {
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(90);

    private final Path dir;
    private final Path logDir;
    private final int port;
    private final int controllerPort;
    private final Path config;
    private final List<Path> logs = new ArrayList<>();
    private Process process;

    private KafkaBrokerProcess(Path dir, Path logDir, int port, int controllerPort) {
        this.dir = dir;
        this.logDir = logDir;
        this.port = port;
        this.controllerPort = controllerPort;
        this.config = dir.resolve("server.properties");
    }

    /** Formats a fresh log directory under {@code java.io.tmpdir}, starts the broker on free ports and waits until it answers. */
    public static KafkaBrokerProcess start() {
        return start(null);
    }

    /**
     * As {@link #start()}, writing the output of each broker process to a file of its own in {@code logDir}
     * (kept after {@link #close()}); null keeps it in the broker's directory.
     */
    public static KafkaBrokerProcess start(Path logDir) {
        try {
            Path dir = Files.createTempDirectory("settle-kafka-");
            if (logDir != null) {
                Files.createDirectories(logDir);
                logDir = Files.createTempDirectory(logDir, "kafka-broker-");
            }
            KafkaBrokerProcess broker =
                    new KafkaBrokerProcess(dir, logDir == null ? dir : logDir, FreePort.find(), FreePort.find());
            broker.format();
            broker.launch();
            broker.awaitReady(READY_TIMEOUT);
            return broker;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private void format() throws IOException {
        Files.createDirectories(dir.resolve("data"));
        Files.writeString(config, serverProperties());
        Files.writeString(dir.resolve("logback.xml"), """
                <configuration>
                  <appender name="OUT" class="ch.qos.logback.core.ConsoleAppender">
                    <encoder><pattern>%d{HH:mm:ss.SSS} [%thread] %-5level %logger{36} - %msg%n</pattern></encoder>
                  </appender>
                  <logger name="kafka.server.BrokerServer" level="INFO"/>
                  <logger name="kafka.server.KafkaRaftServer" level="INFO"/>
                  <logger name="kafka.server.BrokerLifecycleManager" level="INFO"/>
                  <logger name="kafka.tools.StorageTool" level="INFO"/>
                  <root level="WARN"><appender-ref ref="OUT"/></root>
                </configuration>
                """);
        Path log = dir.resolve("format.log");
        Process p = new ProcessBuilder(command(
                        "kafka.tools.StorageTool",
                        "format",
                        "-t",
                        Uuid.randomUuid().toString(),
                        "-c",
                        config.toString()))
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        try {
            if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
                p.destroyForcibly();
                throw new IllegalStateException("formatting the Kafka storage failed: " + Files.readString(log));
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private String serverProperties() {
        Map<String, String> p = EmbeddedKafka.brokerProperties(
                port, controllerPort, dir.resolve("data").toString());
        p.put("broker.session.timeout.ms", "2000");
        p.put("broker.heartbeat.interval.ms", "500");
        StringBuilder sb = new StringBuilder();
        p.forEach((k, v) -> sb.append(k).append('=').append(v).append('\n'));
        return sb.toString();
    }

    private List<String> command(String main, String... args) {
        String java = ProcessHandle.current().info().command().orElse("java");
        List<String> command = new ArrayList<>(List.of(
                java,
                "-Xmx384m",
                "-XX:+UseSerialGC",
                // C1 only: a restart on a busy machine is mostly JVM and class-loading time
                "-XX:TieredStopAtLevel=1",
                "-Dlogback.configurationFile=" + dir.resolve("logback.xml"),
                "-cp",
                System.getProperty("java.class.path"),
                main));
        command.addAll(List.of(args));
        return command;
    }

    private synchronized void launch() throws IOException {
        Path log = logDir.resolve("broker-" + (logs.size() + 1) + ".log");
        logs.add(log);
        process = new ProcessBuilder(command("kafka.Kafka", config.toString()))
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
    }

    /** Waits until the broker answers {@code describeCluster} with itself; fails if the process died. */
    public void awaitReady(Duration timeout) {
        BrokerReadiness.await(
                bootstrapServers(),
                timeout,
                false,
                () -> {
                    Process p = process;
                    if (p == null || !p.isAlive()) {
                        throw new IllegalStateException(
                                "the Kafka broker process is not running; log: " + currentLog());
                    }
                },
                () -> "; log: " + currentLog());
    }

    /** {@code host:port} of the PLAINTEXT listener; the same across restarts. */
    public String bootstrapServers() {
        return "127.0.0.1:" + port;
    }

    public synchronized boolean alive() {
        return process != null && process.isAlive();
    }

    /** The output of the current (or last) broker process. */
    public synchronized Path currentLog() {
        return logs.isEmpty() ? null : logs.get(logs.size() - 1);
    }

    /** SIGKILL: no shutdown hook, no flush, no controlled shutdown; returns once the process is gone. */
    public synchronized void kill() {
        if (process != null) {
            process.destroyForcibly();
            waitGone();
        }
    }

    /** SIGTERM: Kafka's controlled shutdown; SIGKILL if it has not ended within 30 s. */
    public synchronized void stop() {
        if (process != null && process.isAlive()) {
            process.destroy();
            try {
                if (!process.waitFor(30, TimeUnit.SECONDS)) {
                    process.destroyForcibly();
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException(e);
            }
            waitGone();
        }
    }

    private void waitGone() {
        try {
            process.waitFor();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    /**
     * Starts the broker again (killing it first if it still runs) on the same ports and data, and waits until it
     * answers. A start that fails (a port briefly still held) is retried.
     */
    public void restart() {
        IllegalStateException last = null;
        for (int attempt = 0; attempt < 3; attempt++) {
            kill();
            try {
                launch();
                awaitReady(READY_TIMEOUT);
                return;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            } catch (IllegalStateException e) {
                last = e;
            }
        }
        throw last;
    }

    /** Kills the broker and deletes its directory. */
    @Override
    public void close() {
        kill();
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            // best effort
        }
    }
}
