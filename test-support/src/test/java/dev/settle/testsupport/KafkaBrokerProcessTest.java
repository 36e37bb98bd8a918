package dev.settle.testsupport;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringSerializer;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

class KafkaBrokerProcessTest {

    @Test
    void a_killed_broker_restarts_on_the_same_port_with_its_topics_and_committed_offsets() throws Exception {
        try (KafkaBrokerProcess broker = KafkaBrokerProcess.start()) {
            String bootstrap = broker.bootstrapServers();
            TopicPartition tp = new TopicPartition("restart-me", 3);
            try (KafkaProducer<String, String> producer = new KafkaProducer<>(
                    Map.of(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap, ProducerConfig.ACKS_CONFIG, "all"),
                    new StringSerializer(),
                    new StringSerializer())) {
                for (int i = 0; i < 5; i++) {
                    producer.send(new ProducerRecord<>(tp.topic(), tp.partition(), "k", "v" + i))
                            .get(30, TimeUnit.SECONDS);
                }
            }
            try (Admin admin = admin(bootstrap)) {
                admin.alterConsumerGroupOffsets("g", Map.of(tp, new OffsetAndMetadata(4)))
                        .all()
                        .get(30, TimeUnit.SECONDS);
            }

            broker.kill();
            assertFalse(broker.alive());
            long started = System.nanoTime();
            broker.restart();
            System.out.println(
                    "restart after SIGKILL answered in " + (System.nanoTime() - started) / 1_000_000 + " ms");
            assertTrue(broker.alive());
            assertEquals(bootstrap, broker.bootstrapServers());

            try (Admin admin = admin(bootstrap)) {
                assertEquals(
                        12,
                        admin.describeTopics(Set.of(tp.topic()))
                                .allTopicNames()
                                .get(30, TimeUnit.SECONDS)
                                .get(tp.topic())
                                .partitions()
                                .size());
                assertEquals(
                        4,
                        admin.listConsumerGroupOffsets("g")
                                .partitionsToOffsetAndMetadata()
                                .get(30, TimeUnit.SECONDS)
                                .get(tp)
                                .offset());
                assertEquals(
                        5,
                        admin.listOffsets(Map.of(tp, org.apache.kafka.clients.admin.OffsetSpec.latest()))
                                .partitionResult(tp)
                                .get(30, TimeUnit.SECONDS)
                                .offset());
            }

            broker.stop();
            assertFalse(broker.alive());
            broker.restart();
            broker.awaitReady(Duration.ofSeconds(5));
        }
    }

    private static Admin admin(String bootstrap) {
        return Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap));
    }
}
