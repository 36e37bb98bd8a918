package dev.settle.agent.turn;

import dev.settle.agent.AgentWithModel;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelRequest;
import dev.settle.testsupport.ModelResponse;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What a turn is billed, per turn and as the {@code settle.model.tokens} metric: prompt, cached (reported by the
 * provider's prompt cache, simulated by the model double) and completion tokens of every model call, including the
 * call a newer message cut off (estimated then).
 */
class TokenAccountingTest {
    @RegisterExtension
    static final AgentWithModel stack = new AgentWithModel("tokens");

    static final ModelDouble model = stack.model;

    record Billed(int calls, int prompt, int cached, int completion, boolean estimated, int streamed) {}

    static Billed billed(long turnId) {
        return stack.agent()
                .jdbc
                .queryForObject(
                        """
                SELECT model_calls, prompt_tokens, cached_tokens, completion_tokens, tokens_estimated, streamed_chars
                  FROM chat_turn WHERE id = ?""",
                        (rs, i) -> new Billed(
                                rs.getInt(1), rs.getInt(2), rs.getInt(3), rs.getInt(4), rs.getBoolean(5), rs.getInt(6)),
                        turnId);
    }

    static List<Long> turns(long session) {
        return stack.agent()
                .jdbc
                .queryForList("SELECT id FROM chat_turn WHERE session_id = ? ORDER BY id", Long.class, session);
    }

    static double metric(String kind, String outcome) {
        var counter = stack.agent()
                .bean(MeterRegistry.class)
                .find("settle.model.tokens")
                .tags("kind", kind, "outcome", outcome)
                .counter();
        return counter == null ? 0 : counter.count();
    }

    static int commonPrefix(String a, String b) {
        int i = 0;
        while (i < Math.min(a.length(), b.length()) && a.charAt(i) == b.charAt(i)) {
            i++;
        }
        return i;
    }

    static int textChars(ModelRequest request) {
        return request.messages().stream()
                .mapToInt(m -> (m.content() == null ? 0 : m.content().length())
                        + m.toolCalls().stream()
                                .mapToInt(c ->
                                        c.name().length() + c.argumentsJson().length())
                                .sum())
                .sum();
    }

    @Test
    void cached_prompt_tokens_reported_by_the_provider_are_recorded_per_turn_and_counted() {
        model.simulatePrefixCache(true);
        model.respondWith(r -> ModelResponse.text("noted").usage(5_000, 3));
        long session = stack.agent().sessionWithMessages(1);
        TurnRunner runner = stack.agent().bean(TurnRunner.class);
        double cachedBefore = metric("cached", "committed");
        double promptBefore = metric("prompt", "committed");
        assertEquals(TurnOutcome.COMMITTED, runner.run(session));
        stack.agent().newMessage(session);
        assertEquals(TurnOutcome.COMMITTED, runner.run(session));

        List<ModelRequest> requests = model.requests();
        assertEquals(2, requests.size());
        int expectedCached = commonPrefix(
                        requests.get(0).json().path("messages").toString(),
                        requests.get(1).json().path("messages").toString())
                / 4;
        assertTrue(expectedCached > 0, "the second request repeats the first one's start");
        List<Long> ids = turns(session);
        assertEquals(new Billed(1, 5_000, 0, 3, false, 0), billed(ids.get(0)));
        assertEquals(new Billed(1, 5_000, expectedCached, 3, false, 0), billed(ids.get(1)));
        assertEquals(expectedCached, metric("cached", "committed") - cachedBefore);
        assertEquals(10_000, metric("prompt", "committed") - promptBefore);
    }

    @Test
    void a_discarded_turn_is_billed_for_its_finished_calls_and_an_estimate_of_the_call_it_cut() {
        String text = "word ".repeat(80);
        model.respondWith(r -> r.messages().stream().noneMatch(m -> "tool".equals(m.role()))
                ? ModelResponse.toolCall("list_categories", "{}").usage(700, 200, 11)
                : ModelResponse.text(text).chunkSize(4).chunkDelay(Duration.ofMillis(100)));
        long session = stack.agent().sessionWithMessages(1);
        double completionBefore = metric("completion", "discarded");
        double promptBefore = metric("prompt", "discarded");
        double cachedBefore = metric("cached", "discarded");
        CompletableFuture<TurnOutcome> turn = CompletableFuture.supplyAsync(
                () -> stack.agent().bean(TurnRunner.class).run(session));
        await("the second call streams")
                .atMost(Duration.ofSeconds(10))
                .until(() -> stack.agent()
                                .count(
                                        "SELECT COUNT(*) FROM session_event WHERE session_id = ? AND type = 'reply.delta'",
                                        session)
                        > 0);
        stack.agent().newMessage(session);
        assertEquals(TurnOutcome.DISCARDED, turn.orTimeout(10, TimeUnit.SECONDS).join());

        Billed billed = billed(turns(session).getFirst());
        ModelRequest cut = model.requests().get(1);
        assertTrue(billed.streamed() > 0 && billed.streamed() < text.length(), "cut mid-stream: " + billed);
        assertEquals(
                new Billed(2, 700 + textChars(cut) / 4, 200, 11 + billed.streamed() / 4, true, billed.streamed()),
                billed);
        assertEquals(billed.prompt(), metric("prompt", "discarded") - promptBefore);
        assertEquals(200, metric("cached", "discarded") - cachedBefore);
        assertEquals(billed.completion(), metric("completion", "discarded") - completionBefore);
    }
}
