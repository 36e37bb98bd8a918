package dev.settle.agent;

import dev.settle.agent.turn.TurnOutcome;
import dev.settle.agent.turn.TurnRunner;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelRequest;
import dev.settle.testsupport.ModelResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Which model errors a turn retries, through the real OpenAI client against the HTTP model double: only what a
 * retry can fix (here 429 and 503), after the server's Retry-After; a 400 or 401 fails the turn at once with the
 * server's message. The backoff is short (100 ms), so a retry that waits a second waited for the Retry-After.
 */
class ModelRetryTest {
    static TestAgent agent;
    static ModelDouble model;

    @BeforeAll
    static void start() {
        model = ModelDouble.start();
        agent = new TestAgent(
                "modelretry",
                Map.of(
                        "settle.llm.url",
                        model.baseUrl(),
                        "settle.llm.max-attempts",
                        "3",
                        "settle.llm.backoff",
                        "100ms"));
    }

    @AfterAll
    static void stop() {
        agent.close();
        model.close();
    }

    /** A session whose one message is {@code marker}; requests for it get {@code script}, by arrival order (1-based). */
    static long session(String marker, Function<Integer, ModelResponse> script, List<Long> arrivals) {
        model.respondWith(r -> {
            if (!r.body().contains(marker)) {
                return ModelDouble.echo(r);
            }
            arrivals.add(System.nanoTime()); // measured at the double, as the request arrives
            return script.apply(arrivals.size());
        });
        long session = agent.sessionWithMessages(1);
        agent.jdbc.update("UPDATE chat_message SET text = ? WHERE session_id = ?", marker, session);
        return session;
    }

    static List<ModelRequest> calls(String marker) {
        return model.requests().stream().filter(r -> r.body().contains(marker)).toList();
    }

    static List<String> turns(long session) {
        return agent.jdbc.queryForList(
                "SELECT CONCAT(state, ': ', COALESCE(reason, '')) FROM chat_turn WHERE session_id = ? ORDER BY id",
                String.class,
                session);
    }

    static List<String> replies(long session) {
        return agent.jdbc.queryForList(
                "SELECT text FROM chat_message WHERE session_id = ? AND role = 'assistant'", String.class, session);
    }

    @ParameterizedTest
    @ValueSource(ints = {400, 401})
    void a_client_error_fails_the_turn_at_once_with_the_servers_message(int status) {
        String marker = "refused-" + status + "-" + UUID.randomUUID();
        String message = "the server says no (" + status + ")";
        List<Long> arrivals = new CopyOnWriteArrayList<>();
        long session = session(marker, n -> ModelResponse.error(status, message), arrivals);

        assertEquals(TurnOutcome.FAILED, agent.bean(TurnRunner.class).run(session));

        assertEquals(1, calls(marker).size(), "not retried");
        assertEquals(List.of("FAILED: model refused the request (HTTP " + status + "): " + message), turns(session));
        assertEquals(1, agent.count("SELECT failed_version FROM chat_session WHERE id = ?", session));
        assertEquals(List.of(), replies(session));
    }

    @Test
    void a_429_is_retried_no_sooner_than_its_retry_after() {
        String marker = "limited-" + UUID.randomUUID();
        List<Long> arrivals = new CopyOnWriteArrayList<>();
        long session = session(
                marker,
                n -> n == 1
                        ? ModelResponse.error(429, "slow down").retryAfter("1")
                        : ModelResponse.text("after the wait"),
                arrivals);

        assertEquals(TurnOutcome.COMMITTED, agent.bean(TurnRunner.class).run(session));

        assertEquals(2, calls(marker).size());
        Duration between = Duration.ofNanos(arrivals.get(1) - arrivals.get(0));
        assertTrue(between.compareTo(Duration.ofSeconds(1)) >= 0, "second request " + between + " after the first");
        assertEquals(List.of("after the wait"), replies(session));
        assertEquals(List.of("COMMITTED: "), turns(session));
    }

    @Test
    void a_503_is_retried_and_the_turn_commits_one_reply() {
        String marker = "unavailable-" + UUID.randomUUID();
        List<Long> arrivals = new CopyOnWriteArrayList<>();
        long session = session(
                marker,
                n -> n == 1 ? ModelResponse.error(503, "overloaded") : ModelResponse.text("second time lucky"),
                arrivals);

        assertEquals(TurnOutcome.COMMITTED, agent.bean(TurnRunner.class).run(session));

        assertEquals(2, calls(marker).size());
        assertEquals(List.of("second time lucky"), replies(session));
        assertEquals(List.of("COMMITTED: "), turns(session));
    }
}
