package dev.settle.testsupport;

import org.apache.kafka.common.utils.Exit;
import org.springframework.kafka.test.EmbeddedKafkaKraftBroker;

import java.util.Map;

/** A real single-node KRaft Kafka broker in this JVM (spring-kafka-test's broker, the real broker code). */
public final class EmbeddedKafka implements AutoCloseable {
    private final EmbeddedKafkaKraftBroker broker;

    private EmbeddedKafka(EmbeddedKafkaKraftBroker broker) {
        this.broker = broker;
    }

    /** Starts a broker; {@code port} 0 picks a free one. */
    public static EmbeddedKafka start(int port) {
        EmbeddedKafkaKraftBroker broker = new EmbeddedKafkaKraftBroker(1, 12);
        // The test kit publishes its address as the system property spring.kafka.bootstrap-servers by default,
        // which outranks the bootstrap address an application is given in its (default) properties: every app
        // started later in this JVM, even one meant for another broker (KafkaBrokerProcess), joined this one.
        broker.brokerListProperty(EmbeddedKafkaKraftBroker.SPRING_EMBEDDED_KAFKA_BROKERS);
        if (port != 0) {
            broker.kafkaPorts(port);
        }
        broker.brokerProperties(Map.of(
                "auto.create.topics.enable", "true",
                "num.partitions", "12",
                "group.initial.rebalance.delay.ms", "0",
                "offsets.topic.num.partitions", "12",
                "log.retention.hours", "24"));
        // Kafka's test kit registers a JVM shutdown hook that deletes the broker's log directories: on SIGTERM it
        // would take the broker down while the applications are still closing. close() deletes them itself.
        Exit.setShutdownHookAdder((name, hook) -> { });
        try {
            broker.afterPropertiesSet();
        } finally {
            Exit.resetShutdownHookAdder();
        }
        return new EmbeddedKafka(broker);
    }

    public String bootstrapServers() {
        return broker.getBrokersAsString();
    }

    @Override
    public void close() {
        broker.destroy();
    }
}
