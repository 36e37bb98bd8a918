package dev.settle.embedded;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

/** Waits until a Kafka broker answers: one rule for the in-process broker and the broker in a child process. */
public final class BrokerReadiness {
    private BrokerReadiness() {}

    /**
     * Waits until the broker at {@code bootstrapServers} answers {@code describeCluster} with itself and, with
     * {@code groups}, coordinates consumer groups (asking for a group's offsets creates {@code __consumer_offsets}
     * and loads its coordinator, which the first consumer group would otherwise wait for).
     *
     * @param alive  throws when the broker cannot come up any more (its process died); called before each look
     * @param detail appended to the timeout's message (e.g. the broker's log)
     */
    public static void await(
            String bootstrapServers, Duration timeout, boolean groups, Runnable alive, Supplier<String> detail) {
        long deadline = System.nanoTime() + timeout.toNanos();
        try (Admin admin = Admin.create(Map.of(
                AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrapServers,
                AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, 2000,
                AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, 2000,
                AdminClientConfig.RECONNECT_BACKOFF_MAX_MS_CONFIG, 200))) {
            while (true) {
                alive.run();
                try {
                    if (!admin.describeCluster(new DescribeClusterOptions().timeoutMs(2000))
                            .nodes()
                            .get(3, TimeUnit.SECONDS)
                            .isEmpty()) {
                        if (groups) {
                            admin.listConsumerGroupOffsets("settle-embedded-ready")
                                    .partitionsToOffsetAndMetadata()
                                    .get(3, TimeUnit.SECONDS);
                        }
                        return;
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                } catch (Exception notYet) {
                    // not up yet
                }
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("the Kafka broker at " + bootstrapServers
                            + " did not answer within " + timeout + detail.get());
                }
                try {
                    Thread.sleep(50);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    throw new IllegalStateException(e);
                }
            }
        }
    }
}
