package dev.settle.debounce;

import dev.settle.contracts.EventCodec;
import dev.settle.contracts.MessageAccepted;
import dev.settle.contracts.Topics;
import dev.settle.testsupport.SharedInfra;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.springframework.kafka.core.DefaultKafkaProducerFactory;
import org.springframework.kafka.core.KafkaTemplate;

import java.time.Duration;
import java.util.Map;

import static org.awaitility.Awaitility.await;

/** Produces MessageAccepted like ingest-api does, and tells when a consumer group has processed a record. */
final class KafkaEvents {
    private static KafkaProducer<String, String> producer;

    private KafkaEvents() {}

    private static synchronized KafkaProducer<String, String> producer() {
        if (producer == null) {
            producer = new KafkaProducer<>(
                    Map.of(
                            ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                            SharedInfra.kafkaBootstrap(),
                            ProducerConfig.ACKS_CONFIG,
                            "all",
                            ProducerConfig.LINGER_MS_CONFIG,
                            0),
                    new StringSerializer(),
                    new StringSerializer());
        }
        return producer;
    }

    /** A KafkaTemplate of string records on {@code bootstrap}, blocking at most {@code maxBlockMs} for metadata. */
    static KafkaTemplate<String, String> template(String bootstrap, int maxBlockMs) {
        return new KafkaTemplate<>(new DefaultKafkaProducerFactory<>(
                Map.of(
                        ProducerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        bootstrap,
                        ProducerConfig.MAX_BLOCK_MS_CONFIG,
                        maxBlockMs),
                new StringSerializer(),
                new StringSerializer()));
    }

    static RecordMetadata publish(MessageAccepted event) {
        return send(String.valueOf(event.sessionId()), EventCodec.encode(event));
    }

    static RecordMetadata send(String key, String value) {
        try {
            return producer()
                    .send(new ProducerRecord<>(Topics.MESSAGE_ACCEPTED, key, value))
                    .get();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Waits until {@code group} has committed past {@code record}: the listener has processed it. */
    static void awaitProcessed(String group, RecordMetadata record) {
        TopicPartition tp = new TopicPartition(record.topic(), record.partition());
        try (Admin admin =
                Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, SharedInfra.kafkaBootstrap()))) {
            await(group + " to process " + tp + "@" + record.offset())
                    .atMost(Duration.ofSeconds(20))
                    .pollInterval(Duration.ofMillis(10))
                    .pollInSameThread()
                    .until(() -> {
                        try {
                            OffsetAndMetadata committed = admin.listConsumerGroupOffsets(group)
                                    .partitionsToOffsetAndMetadata()
                                    .get()
                                    .get(tp);
                            return committed != null && committed.offset() > record.offset();
                        } catch (Exception e) {
                            throw new IllegalStateException(e);
                        }
                    });
        }
    }
}
