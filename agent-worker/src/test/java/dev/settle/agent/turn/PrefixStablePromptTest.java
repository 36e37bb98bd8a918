package dev.settle.agent.turn;

import dev.settle.agent.AgentWithModel;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelRequest;
import dev.settle.testsupport.ModelResponse;
import dev.settle.testsupport.ToolCall;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;
import tools.jackson.databind.JsonNode;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

/**
 * Every model request of an interrupted turn is a strict prefix of its successor's first request (so a provider's
 * prompt cache serves the repeat), with and without finished tool calls, and every request is a valid OpenAI
 * conversation: an assistant message with tool calls is followed by exactly their results.
 */
class PrefixStablePromptTest {
    @RegisterExtension
    static final AgentWithModel stack = new AgentWithModel("prefix");

    static final ModelDouble model = stack.model;

    static ModelResponse slowText() {
        return ModelResponse.text("word ".repeat(80)).chunkSize(4).chunkDelay(Duration.ofMillis(100));
    }

    static ModelResponse calls(String... names) {
        List<ToolCall> calls = new ArrayList<>();
        for (String name : names) {
            calls.add(new ToolCall("call_" + UUID.randomUUID(), name, "{}"));
        }
        return ModelResponse.toolCalls(calls);
    }

    /** Runs a turn, lets it stream, then commits a newer message: the turn is discarded. */
    static void interruptedTurn(long session) {
        CompletableFuture<TurnOutcome> turn = CompletableFuture.supplyAsync(
                () -> stack.agent().bean(TurnRunner.class).run(session));
        await("the turn streams")
                .atMost(Duration.ofSeconds(10))
                .until(() -> stack.agent().count("""
                                SELECT COUNT(*) FROM session_event e
                                 WHERE e.session_id = ? AND e.type = 'reply.delta'
                                   AND e.turn_id = (SELECT MAX(t.id) FROM chat_turn t WHERE t.session_id = ?)""", session, session) > 0);
        stack.agent().newMessage(session);
        assertEquals(TurnOutcome.DISCARDED, turn.orTimeout(10, TimeUnit.SECONDS).join());
    }

    static List<JsonNode> messages(ModelRequest request) {
        List<JsonNode> list = new ArrayList<>();
        request.json().path("messages").forEach(list::add);
        return list;
    }

    static void assertStrictPrefix(ModelRequest earlier, ModelRequest later) {
        List<JsonNode> a = messages(earlier);
        List<JsonNode> b = messages(later);
        assertTrue(
                a.size() < b.size() && b.subList(0, a.size()).equals(a),
                "request " + earlier.sequence() + " is a strict prefix of request " + later.sequence() + "\n" + a + "\n"
                        + b);
    }

    /** OpenAI's rule: tool results follow the assistant message that made the calls, one per call, nothing dangling. */
    static void assertValidConversation(ModelRequest request) {
        List<ModelRequest.Msg> msgs = request.messages();
        assertEquals("system", msgs.getFirst().role());
        for (int i = 0; i < msgs.size(); i++) {
            ModelRequest.Msg m = msgs.get(i);
            if ("tool".equals(m.role())) {
                fail("request " + request.sequence() + ": tool result at " + i + " answers no preceding call");
            }
            if ("assistant".equals(m.role()) && !m.toolCalls().isEmpty()) {
                List<String> ids = m.toolCalls().stream().map(ToolCall::id).toList();
                List<String> answered = new ArrayList<>();
                while (i + 1 < msgs.size() && "tool".equals(msgs.get(i + 1).role())) {
                    answered.add(msgs.get(++i).toolCallId());
                }
                assertEquals(ids, answered, "request " + request.sequence() + ": results of " + ids);
            }
        }
    }

    @Test
    void without_tool_calls_the_interrupted_request_is_a_prefix_of_the_successors() {
        model.respondWith(r -> r.sequence() == 1 ? slowText() : ModelResponse.text("done"));
        long session = stack.agent().sessionWithMessages(1);
        interruptedTurn(session);
        assertEquals(TurnOutcome.COMMITTED, stack.agent().bean(TurnRunner.class).run(session));

        List<ModelRequest> requests = model.requests();
        assertEquals(2, requests.size());
        assertStrictPrefix(requests.get(0), requests.get(1));
        assertEquals(
                List.of("system", "user", "user"),
                requests.get(1).messages().stream().map(ModelRequest.Msg::role).toList(),
                "each message stays a message of its own");
    }

    @Test
    void finished_tool_calls_keep_their_place_across_two_interrupts() {
        model.respondWith(r -> switch (r.sequence()) {
            case 1 -> calls("list_categories", "list_categories"); // two calls in one assistant message
            case 2, 4 -> slowText();
            case 3 -> calls("list_categories");
            default -> ModelResponse.text("done");
        });
        long session = stack.agent().sessionWithMessages(1);
        interruptedTurn(session); // requests 1 (tools) and 2 (cut); version 2 arrives
        interruptedTurn(session); // requests 3 (tools) and 4 (cut); version 3 arrives
        assertEquals(TurnOutcome.COMMITTED, stack.agent().bean(TurnRunner.class).run(session));

        List<ModelRequest> requests = model.requests();
        assertEquals(5, requests.size());
        assertEquals(
                List.of("list_categories#1:COMPLETED", "list_categories#2:COMPLETED", "list_categories#1:COMPLETED"),
                stack.agent()
                        .jdbc
                        .queryForList(
                                "SELECT CONCAT(tool_name, '#', ordinal, ':', status) FROM tool_execution WHERE session_id = ? ORDER BY id",
                                String.class,
                                session));
        assertStrictPrefix(requests.get(0), requests.get(1));
        assertStrictPrefix(requests.get(1), requests.get(2)); // the first successor repeats the cut request
        assertStrictPrefix(requests.get(2), requests.get(3));
        assertStrictPrefix(requests.get(3), requests.get(4)); // and so does the second
        requests.forEach(PrefixStablePromptTest::assertValidConversation);
        assertEquals(
                List.of("system", "user", "assistant", "tool", "tool", "user", "assistant", "tool", "user"),
                requests.get(4).messages().stream().map(ModelRequest.Msg::role).toList(),
                "each call after the messages its turn answered, each newer message after those calls");
    }
}
