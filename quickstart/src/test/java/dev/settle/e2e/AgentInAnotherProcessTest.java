package dev.settle.e2e;

import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static dev.settle.e2e.SettleSystem.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The event stream when the agent worker is another process (its own JVM, as in production): the ingest API
 * never sees the agent's memory, so every delta a client reads came through the database. A client that
 * disconnects mid-reply and reconnects with Last-Event-ID gets the rest exactly once.
 */
class AgentInAnotherProcessTest {
    static SettleSystem settle;

    @BeforeAll
    static void start() {
        settle = new SettleSystem("agent-process", false);
    }

    @AfterAll
    static void stop() {
        settle.close();
    }

    @Test
    void the_event_stream_carries_the_deltas_of_an_agent_in_another_jvm_exactly_once_across_a_reconnect() throws Exception {
        String s = SettleSystem.newSessionId();
        String reply = StreamingTest.words("from another process", 60);
        settle.model.respondWith(r -> r.body().contains(s)
                ? ModelResponse.text(reply).chunkSize(5).chunkDelay(Duration.ofMillis(25)) : ModelDouble.echo(r));
        Map<String, Object> props = new HashMap<>(settle.sharedProperties());
        props.put("spring.kafka.consumer.group-id", settle.agentGroup());
        props.put("logging.file.name", "");
        try (AgentProcess agent = new AgentProcess(props)) {
            await("the agent started", Duration.ofSeconds(90), () -> agent.logContains("Started AgentWorkerApplication"));
            await("the agent joined the group", Duration.ofSeconds(30), () -> agent.logContains("partitions assigned"));
            settle.post(s, "tell me " + s);
            String url = settle.baseUrl() + "/v1/sessions/" + s + "/events";
            List<SseClient.Event> first = SseClient.read(url, SettleSystem.KEY, null,
                    e -> e.type().equals("reply.delta") && e.data().get("seq").asInt() >= 5);
            List<SseClient.Event> second = SseClient.read(url, SettleSystem.KEY, first.getLast().id(),
                    e -> e.type().equals("reply.created"));

            List<SseClient.Event> all = new ArrayList<>(first);
            all.addAll(second);
            for (int i = 1; i < all.size(); i++) {
                assertEquals(all.get(i - 1).id() + 1, all.get(i).id(), "ids have no gap and no repeat");
            }
            assertEquals(List.of("message.accepted", "turn.started"), all.subList(0, 2).stream().map(SseClient.Event::type).toList());
            StringBuilder deltas = new StringBuilder();
            Set<Integer> seqs = new HashSet<>();
            for (SseClient.Event e : all) {
                if (e.type().equals("reply.delta")) {
                    assertTrue(seqs.add(e.data().get("seq").asInt()), "duplicate seq " + e.data().get("seq"));
                    deltas.append(e.data().get("text").asString());
                }
            }
            assertEquals(reply, deltas.toString());
            assertEquals("reply.created", all.getLast().type());
            assertEquals(reply, all.getLast().data().get("text").asString());
            assertEquals(1, settle.replies(s).size());
            await("the webhook", Duration.ofSeconds(30), () -> settle.webhooks(s).size() == 1);
            assertEquals(reply, settle.webhooks(s).getFirst().json().get("data").get("text").asString());
        }
    }
}
