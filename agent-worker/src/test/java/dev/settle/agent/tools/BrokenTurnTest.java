package dev.settle.agent.tools;

import dev.settle.agent.TestAgent;
import dev.settle.agent.turn.TurnOutcome;
import dev.settle.agent.turn.TurnRunner;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A turn broken by a database error while its lease is alive (here: the table its tool call's result goes to is
 * away for a moment, as a connection lost mid-statement would break it) ends as an error: its row says FAILED with
 * the error as its reason (not RUNNING, to be closed later as "abandoned" by whoever claims the session next), its
 * lease is released, and the session's next turn answers it once.
 */
class BrokenTurnTest {
    static final PausingTools pausing = new PausingTools();
    static final ModelDouble model = ModelDouble.start();
    static TestAgent agent;

    @BeforeAll
    static void start() {
        agent = new TestAgent(
                "brokenturn", Map.of("settle.llm.url", model.baseUrl(), "settle.llm.max-attempts", "1"), pausing);
        pausing.jdbc = agent.jdbc;
    }

    @AfterAll
    static void stop() {
        agent.close();
        model.close();
    }

    @Test
    void a_turn_broken_by_a_database_error_is_closed_with_its_error_and_the_next_turn_answers() throws Exception {
        model.respondWith(r -> r.messages().stream().anyMatch(m -> "tool".equals(m.role()))
                ? ModelResponse.text("looked it up")
                : ModelResponse.toolCall("pausing_lookup", "{}"));
        MeterRegistry meters = agent.bean(MeterRegistry.class);
        double errors = meters.counter("settle.turns", "outcome", "error").count();
        long session = agent.sessionWithMessages(1);
        pausing.arm();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            CompletableFuture<TurnOutcome> turn = CompletableFuture.supplyAsync(
                    () -> agent.bean(TurnRunner.class).run(session), threads);
            assertTrue(pausing.awaitPaused(), "the turn is inside its tool call");
            agent.jdbc.execute("RENAME TABLE tool_execution TO tool_execution_away");
            try {
                pausing.resume(); // recording the call's result fails: no such table
                assertEquals(TurnOutcome.ERROR, turn.get(30, TimeUnit.SECONDS));
            } finally {
                agent.jdbc.execute("RENAME TABLE tool_execution_away TO tool_execution");
            }
        }
        assertEquals(
                errors + 1, meters.counter("settle.turns", "outcome", "error").count(), 0.0);
        Map<String, Object> broken =
                agent.jdbc.queryForMap("SELECT id, state, reason FROM chat_turn WHERE session_id = ?", session);
        assertEquals("FAILED", broken.get("state"));
        assertTrue(
                ((String) broken.get("reason")).matches("error: .*tool_execution.*"),
                "the error is the turn's reason: " + broken.get("reason"));
        assertNull(
                agent.jdbc.queryForObject("SELECT lease_token FROM chat_session WHERE id = ?", String.class, session),
                "the lease is released");

        assertEquals(TurnOutcome.COMMITTED, agent.bean(TurnRunner.class).run(session));
        assertEquals(
                List.of("looked it up"),
                agent.jdbc.queryForList(
                        "SELECT text FROM chat_message WHERE session_id = ? AND role = 'assistant'",
                        String.class,
                        session),
                "exactly one reply");
        assertEquals(
                broken.get("reason"),
                agent.jdbc.queryForObject("SELECT reason FROM chat_turn WHERE id = ?", String.class, broken.get("id")),
                "the next holder found no turn to close as abandoned");
    }
}
