package dev.settle.debounce;

import dev.settle.contracts.EventCodec;
import dev.settle.contracts.SessionReady;
import dev.settle.contracts.Topics;
import dev.settle.testsupport.SharedInfra;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.TopicExistsException;
import org.apache.kafka.common.serialization.StringDeserializer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutionException;

import static org.awaitility.Awaitility.await;

/**
 * Reads every SessionReady from the start of the shared topic (all partitions assigned, no group), so that a
 * test can count exactly: once nothing can fire any more, {@link #drainToEnd()} reads up to the end offsets.
 */
final class ReadyEvents implements AutoCloseable {
    private final KafkaConsumer<String, String> consumer;
    private final List<SessionReady> seen = new ArrayList<>();

    ReadyEvents() {
        ensureTopic();
        consumer = new KafkaConsumer<>(
                Map.of(
                        ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG,
                        SharedInfra.kafkaBootstrap(),
                        ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG,
                        false,
                        ConsumerConfig.ISOLATION_LEVEL_CONFIG,
                        "read_committed"),
                new StringDeserializer(),
                new StringDeserializer());
        List<TopicPartition> partitions = consumer.partitionsFor(Topics.SESSION_READY).stream()
                .map(p -> new TopicPartition(p.topic(), p.partition()))
                .toList();
        consumer.assign(partitions);
        consumer.seekToBeginning(partitions);
    }

    /** Tests that run before any worker context did have no topic yet; create it as Topology would. */
    private static void ensureTopic() {
        try (Admin admin =
                Admin.create(Map.of(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, SharedInfra.kafkaBootstrap()))) {
            admin.createTopics(List.of(new NewTopic(Topics.SESSION_READY, Topics.PARTITIONS, (short) 1)))
                    .all()
                    .get();
        } catch (ExecutionException e) {
            if (!(e.getCause() instanceof TopicExistsException)) {
                throw new IllegalStateException(e);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private void poll(Duration timeout) {
        for (ConsumerRecord<String, String> r : consumer.poll(timeout)) {
            seen.add(EventCodec.decode(r.value(), SessionReady.class));
        }
    }

    /** Events seen so far for these sessions, in topic order per session. */
    List<SessionReady> of(Collection<Long> sessionIds) {
        Set<Long> ids = Set.copyOf(sessionIds);
        return seen.stream().filter(e -> ids.contains(e.sessionId())).toList();
    }

    List<SessionReady> of(long sessionId) {
        return of(List.of(sessionId));
    }

    /** Polls until every one of these sessions has at least one event; returns the first event of each. */
    List<SessionReady> awaitFirst(Collection<Long> sessionIds) {
        await("SessionReady for " + sessionIds.size() + " session(s)")
                .atMost(Duration.ofSeconds(20))
                .pollInterval(Duration.ofMillis(10))
                .pollInSameThread()
                .until(() -> {
                    poll(Duration.ofMillis(50));
                    return of(sessionIds).stream()
                                    .map(SessionReady::sessionId)
                                    .distinct()
                                    .count()
                            == sessionIds.size();
                });
        return sessionIds.stream().map(id -> of(id).getFirst()).toList();
    }

    SessionReady awaitFirst(long sessionId) {
        return awaitFirst(List.of(sessionId)).getFirst();
    }

    /** Reads everything published up to now. */
    void drainToEnd() {
        Map<TopicPartition, Long> end = consumer.endOffsets(consumer.assignment());
        await("the session-ready topic to be read to its end")
                .atMost(Duration.ofSeconds(20))
                .pollInterval(Duration.ofMillis(10))
                .pollInSameThread()
                .until(() -> {
                    poll(Duration.ofMillis(50));
                    return end.entrySet().stream().allMatch(e -> consumer.position(e.getKey()) >= e.getValue());
                });
    }

    @Override
    public void close() {
        consumer.close();
    }
}
