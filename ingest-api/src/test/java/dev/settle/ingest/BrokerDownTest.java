package dev.settle.ingest;

import dev.settle.contracts.Topics;
import dev.settle.testsupport.KafkaBrokerProcess;
import dev.settle.testsupport.SharedInfra;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * While the broker is down a POST is still answered 202 at once: MessageAccepted is queued to a sender thread,
 * never sent on the request thread (a producer that forgot the topic's metadata blocks each send for
 * {@code max.block.ms}); once the broker is back the events flow again.
 */
class BrokerDownTest {

    @Test
    void posts_answer_202_at_once_while_the_broker_is_down_and_events_flow_again_after_its_restart() throws Exception {
        try (KafkaBrokerProcess broker = KafkaBrokerProcess.start();
                IngestApp app =
                        new IngestApp(SharedInfra.newDatabase("brokerdown"), broker.bootstrapServers(), Map.of());
                KafkaConsumer<String, String> events = new KafkaConsumer<>(
                        Map.of(
                                ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                                broker.bootstrapServers(),
                                ConsumerConfig.AUTO_OFFSET_RESET_CONFIG,
                                "earliest"),
                        new StringDeserializer(),
                        new StringDeserializer())) {
            events.assign(IntStream.range(0, Topics.PARTITIONS)
                    .mapToObj(p -> new TopicPartition(Topics.MESSAGE_ACCEPTED, p))
                    .toList());
            String warm = post(app, "before the kill").sessionPk;
            awaitEvent(events, warm);

            broker.kill();
            Thread.sleep(1000); // the producer notices, rebootstraps and forgets the topic's metadata
            List<Long> millis = new ArrayList<>();
            for (int i = 0; i < 6; i++) {
                long started = System.nanoTime();
                post(app, "while the broker is down " + i);
                millis.add((System.nanoTime() - started) / 1_000_000);
                Thread.sleep(300);
            }
            assertTrue(
                    millis.stream().allMatch(ms -> ms < 1000), "202 while the broker was down took " + millis + " ms");

            broker.restart();
            String after = post(app, "after the restart").sessionPk;
            awaitEvent(events, after);
        }
    }

    private record Posted(String sessionPk) {}

    private static Posted post(IngestApp app, String text) {
        String s = "down-" + UUID.randomUUID();
        HttpResponse<String> r =
                app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"" + text + "\"}");
        assertEquals(202, r.statusCode(), r.body());
        return new Posted(Long.toString(
                app.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, s)));
    }

    private static void awaitEvent(KafkaConsumer<String, String> events, String sessionPk) {
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (System.nanoTime() < deadline) {
            for (ConsumerRecord<String, String> r : events.poll(Duration.ofMillis(200))) {
                if (sessionPk.equals(r.key())) {
                    return;
                }
            }
        }
        throw new AssertionError("no MessageAccepted for session " + sessionPk + " within 60 s");
    }
}
