package dev.settle.agent.tools;

import com.zaxxer.hikari.HikariDataSource;
import dev.settle.agent.TestAgent;
import dev.settle.agent.lease.Heartbeats;
import dev.settle.agent.turn.TurnOutcome;
import dev.settle.agent.turn.TurnRunner;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A turn whose database call breaks while its tool call's result is being recorded, in the two ways it can:
 *
 * <ul>
 *   <li>its lease is lost while its thread waits inside the call (here: for a pooled connection, as under
 *       overload): the heartbeat's interrupt breaks the wait, and whatever the call then throws is the lease's loss
 *       (counted in {@code settle.lease.fenced}), not an unexpected failure of the turn;</li>
 *   <li>the call fails while the lease is alive (here: the table the result goes to is away for a moment, as a
 *       connection lost mid-statement would break it): the turn ends as an error, its row FAILED with the error as
 *       its reason (not RUNNING, to be closed later as "abandoned" by whoever claims the session next), its stream
 *       ended by {@code turn.abandoned} with that reason, its lease released, and the session's next turn answers it
 *       once.</li>
 * </ul>
 *
 * Lease TTL 1 h: no scheduled renewal runs; the first test runs the one round that finds the lease gone.
 */
class MidStatementTest {
    static final PausingTools pausing = new PausingTools();
    static final ModelDouble model = ModelDouble.start();
    static TestAgent agent;

    @BeforeAll
    static void start() {
        agent = new TestAgent(
                "midstatement",
                Map.of(
                        "settle.llm.url", model.baseUrl(),
                        "settle.llm.max-attempts", "1",
                        "settle.lease.ttl", "1h",
                        // no interrupt polls: the turn's thread is the only one that waits for a connection
                        "settle.stream.interrupt-poll", "1h",
                        "spring.datasource.hikari.maximum-pool-size", "2"),
                pausing);
        pausing.jdbc = agent.jdbc;
    }

    @AfterAll
    static void stop() {
        agent.close();
        model.close();
    }

    /** Starts a turn of {@code session} and returns once it has stopped inside its tool call. */
    private static CompletableFuture<TurnOutcome> turnPausedInItsToolCall(ExecutorService threads, long session)
            throws InterruptedException {
        pausing.arm();
        CompletableFuture<TurnOutcome> turn =
                CompletableFuture.supplyAsync(() -> agent.bean(TurnRunner.class).run(session), threads);
        assertTrue(pausing.awaitPaused(), "the turn is inside its tool call");
        return turn;
    }

    /** The model looks something up, then answers "looked it up". */
    private static void lookupThenAnswer() {
        model.respondWith(r -> r.messages().stream().anyMatch(m -> "tool".equals(m.role()))
                ? ModelResponse.text("looked it up")
                : ModelResponse.toolCall("pausing_lookup", "{}"));
    }

    @Test
    void a_turn_interrupted_while_it_waits_for_a_connection_ends_as_a_lost_lease() throws Exception {
        lookupThenAnswer();
        MeterRegistry meters = agent.bean(MeterRegistry.class);
        double fenced = meters.counter("settle.lease.fenced").count();
        long session = agent.sessionWithMessages(1);
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            CompletableFuture<TurnOutcome> turn = turnPausedInItsToolCall(threads, session);
            HikariDataSource pool = agent.bean(HikariDataSource.class);
            List<Connection> taken = new ArrayList<>();
            try {
                while (taken.size() < pool.getMaximumPoolSize()) {
                    taken.add(pool.getConnection());
                }
                taken.getFirst()
                        .createStatement()
                        .executeUpdate("UPDATE chat_session SET lease_token = 'someone-else' WHERE id = " + session);
                pausing.resume(); // the call returns; recording its result waits for a connection
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> pool.getHikariPoolMXBean().getThreadsAwaitingConnection(), n -> n == 1);
                agent.bean(Heartbeats.class).renew(); // finds the lease gone and interrupts the turn's thread
            } finally {
                for (Connection c : taken) {
                    c.close();
                }
            }

            assertEquals(TurnOutcome.LEASE_LOST, turn.get(30, TimeUnit.SECONDS));
        }
        assertEquals(fenced + 1, meters.counter("settle.lease.fenced").count(), 0.0);
        assertEquals(
                List.of("EXECUTING"),
                agent.jdbc.queryForList(
                        "SELECT status FROM tool_execution WHERE session_id = ?", String.class, session),
                "the fenced-out holder recorded nothing more");
    }

    @Test
    void a_turn_broken_by_a_database_error_is_closed_with_its_error_and_the_next_turn_answers() throws Exception {
        lookupThenAnswer();
        MeterRegistry meters = agent.bean(MeterRegistry.class);
        double errors = meters.counter("settle.turns", "outcome", "error").count();
        long session = agent.sessionWithMessages(1);
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            CompletableFuture<TurnOutcome> turn = turnPausedInItsToolCall(threads, session);
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
        List<String> events = agent.jdbc.queryForList(
                "SELECT type FROM session_event WHERE turn_id = ? ORDER BY seq", String.class, broken.get("id"));
        assertEquals("turn.started", events.getFirst(), events.toString());
        assertEquals("turn.abandoned", events.getLast(), "its stream ends with turn.abandoned: " + events);
        assertEquals(1, java.util.Collections.frequency(events, "turn.abandoned"), events.toString());
        assertEquals(
                broken.get("reason"),
                agent.jdbc.queryForObject(
                        "SELECT JSON_VALUE(data, '$.reason') FROM session_event WHERE turn_id = ? AND type = 'turn.abandoned'",
                        String.class,
                        broken.get("id")));

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
