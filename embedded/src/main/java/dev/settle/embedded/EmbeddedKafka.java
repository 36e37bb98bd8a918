package dev.settle.embedded;

import kafka.server.KafkaConfig;
import kafka.server.KafkaRaftServer;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.metadata.storage.Formatter;
import org.apache.kafka.server.common.MetadataVersion;

import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.Properties;
import java.util.stream.Stream;

/**
 * A real single-node KRaft Kafka broker (combined broker and controller, Kafka's own {@link KafkaRaftServer}) in
 * this JVM, on a fresh log directory under {@code java.io.tmpdir} that {@link #close()} deletes.
 *
 * <ol>
 *   <li>The storage is formatted in-process ({@link Formatter}, what {@code kafka-storage format} does).</li>
 *   <li>Topics are created on first use with 12 partitions; the group coordinator does not delay the first
 *       rebalance.</li>
 *   <li>No JVM shutdown hook: the owner closes the broker, after the applications that use it.</li>
 * </ol>
 */
public final class EmbeddedKafka implements AutoCloseable {
    private static final Duration READY_TIMEOUT = Duration.ofSeconds(60);

    private final KafkaRaftServer server;
    private final Path dir;
    private final int port;

    private EmbeddedKafka(KafkaRaftServer server, Path dir, int port) {
        this.server = server;
        this.dir = dir;
        this.port = port;
    }

    /** Starts a broker and waits until it answers; {@code port} 0 picks a free one. */
    public static EmbeddedKafka start(int port) {
        int chosen = port == 0 ? FreePort.find() : port;
        int controllerPort = FreePort.find();
        Path dir;
        try {
            dir = Files.createTempDirectory("settle-embedded-kafka-");
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        String logDir = dir.resolve("data").toString();
        Properties props = new Properties();
        props.putAll(brokerProperties(chosen, controllerPort, logDir));
        KafkaConfig config = KafkaConfig.fromProps(props, false);
        try {
            new Formatter()
                    .setPrintStream(new PrintStream(PrintStream.nullOutputStream()))
                    .setNodeId(config.nodeId())
                    .setClusterId(Uuid.randomUuid().toString())
                    .setDirectories(config.logDirs())
                    .setMetadataLogDirectory(config.metadataLogDir())
                    .setControllerListenerName("CONTROLLER")
                    .setReleaseVersion(MetadataVersion.LATEST_PRODUCTION)
                    .run();
        } catch (Exception e) {
            delete(dir);
            throw new IllegalStateException("formatting the embedded Kafka storage in " + dir + " failed", e);
        }
        KafkaRaftServer server = new KafkaRaftServer(config, Time.SYSTEM);
        EmbeddedKafka kafka = new EmbeddedKafka(server, dir, chosen);
        try {
            server.startup();
            kafka.awaitReady();
        } catch (RuntimeException e) {
            kafka.close();
            throw new IllegalStateException("the embedded Kafka broker did not start", e);
        }
        return kafka;
    }

    /**
     * The server properties of a single-node KRaft broker on 127.0.0.1 (combined broker and controller, PLAINTEXT
     * on {@code port}, the controller on {@code controllerPort}): topics created on first use with 12 partitions,
     * replication factor 1 for the internal topics, no delay before a group's first rebalance. Shared with the
     * broker that test-support runs in a child process.
     */
    public static Map<String, String> brokerProperties(int port, int controllerPort, String logDir) {
        Map<String, String> p = new LinkedHashMap<>();
        p.put("process.roles", "broker,controller");
        p.put("node.id", "1");
        p.put("controller.quorum.voters", "1@127.0.0.1:" + controllerPort);
        p.put("listeners", "PLAINTEXT://127.0.0.1:" + port + ",CONTROLLER://127.0.0.1:" + controllerPort);
        p.put("advertised.listeners", "PLAINTEXT://127.0.0.1:" + port);
        p.put("controller.listener.names", "CONTROLLER");
        p.put("inter.broker.listener.name", "PLAINTEXT");
        p.put("listener.security.protocol.map", "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT");
        p.put("log.dirs", logDir);
        p.put("auto.create.topics.enable", "true");
        p.put("num.partitions", "12");
        p.put("offsets.topic.replication.factor", "1");
        p.put("offsets.topic.num.partitions", "12");
        p.put("transaction.state.log.replication.factor", "1");
        p.put("transaction.state.log.min.isr", "1");
        p.put("share.coordinator.state.topic.replication.factor", "1");
        p.put("share.coordinator.state.topic.min.isr", "1");
        p.put("group.initial.rebalance.delay.ms", "0");
        p.put("log.retention.hours", "24");
        return p;
    }

    /** Waits until the broker answers and coordinates consumer groups. */
    private void awaitReady() {
        BrokerReadiness.await(bootstrapServers(), READY_TIMEOUT, true, () -> {}, () -> "");
    }

    /** {@code host:port} of the PLAINTEXT listener. */
    public String bootstrapServers() {
        return "127.0.0.1:" + port;
    }

    /** Stops the broker and deletes its log directory. */
    @Override
    public void close() {
        try {
            server.shutdown();
            server.awaitShutdown();
        } finally {
            delete(dir);
        }
    }

    private static void delete(Path dir) {
        try (Stream<Path> files = Files.walk(dir)) {
            files.sorted(Comparator.reverseOrder()).forEach(f -> f.toFile().delete());
        } catch (IOException e) {
            // best effort
        }
    }
}
