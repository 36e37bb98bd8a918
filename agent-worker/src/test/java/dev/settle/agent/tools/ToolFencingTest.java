package dev.settle.agent.tools;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.settle.agent.TestAgent;
import dev.settle.agent.lease.LeaseLostException;
import dev.settle.agent.lease.SessionLease;
import dev.settle.agent.turn.Conversation;
import dev.settle.agent.turn.Turns;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The tool level of the fence, driven directly on a real agent-worker context (lease TTL 1 s). */
class ToolFencingTest {
    static TestAgent agent;
    static SessionLease leases;
    static Turns turns;
    static ExactlyOnceToolExecutor executor;
    static ToolReaper reaper;
    static final PausingTools pausing = new PausingTools();

    @BeforeAll
    static void start() {
        agent = new TestAgent(
                "toolfence", Map.of("settle.lease.ttl", "1s", "settle.agent.tool-timeout", "1h"), pausing);
        pausing.jdbc = agent.jdbc;
        leases = agent.bean(SessionLease.class);
        turns = agent.bean(Turns.class);
        executor = agent.bean(ExactlyOnceToolExecutor.class);
        reaper = agent.bean(ToolReaper.class);
    }

    @AfterAll
    static void stop() {
        agent.close();
    }

    static ToolExecutionRequest book(String args) {
        return ToolExecutionRequest.builder()
                .id("call_1")
                .name("create_transaction")
                .arguments(args)
                .build();
    }

    static ToolExecutionRequest call(String tool, String args) {
        return ToolExecutionRequest.builder()
                .id("call_p")
                .name(tool)
                .arguments(args)
                .build();
    }

    int ledgerRows(long session) {
        return agent.count("SELECT COUNT(*) FROM ledger_entry WHERE session_id = ?", session);
    }

    List<String> statuses(long session) {
        return agent.jdbc.queryForList(
                "SELECT status FROM tool_execution WHERE session_id = ? ORDER BY id", String.class, session);
    }

    /** Ledger rows of the session including uncommitted ones: what a paused transaction has written so far. */
    int uncommittedLedgerRows(long session) throws Exception {
        try (Connection c = agent.bean(DataSource.class).getConnection();
                Statement st = c.createStatement()) {
            c.setTransactionIsolation(Connection.TRANSACTION_READ_UNCOMMITTED);
            try (ResultSet rs = st.executeQuery("SELECT COUNT(*) FROM ledger_entry WHERE session_id = " + session)) {
                rs.next();
                return rs.getInt(1);
            } finally {
                c.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
            }
        }
    }

    @Test
    void a_holder_paused_inside_the_tool_transaction_after_its_side_effect_cannot_commit_it() throws Exception {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        long turnId = turns.begin(lease, 1, 1);
        ExactlyOnceToolExecutor.TurnTools tools = executor.forTurn(lease, turnId, 1);
        pausing.arm();
        CompletableFuture<String> paused =
                CompletableFuture.supplyAsync(() -> tools.execute(call("pausing_booking", "{\"amount\":5}")));
        assertTrue(pausing.awaitPaused());
        assertEquals(1, uncommittedLedgerRows(session), "the side effect is written, not committed");
        Thread.sleep(1500); // paused past the TTL (1 s); nobody took over, nobody renewed
        pausing.resume();
        ExecutionException e = assertThrows(ExecutionException.class, () -> paused.get(30, TimeUnit.SECONDS));
        assertInstanceOf(LeaseLostException.class, e.getCause());
        assertEquals(0, ledgerRows(session), "the side effect rolled back");
        assertEquals(List.of("EXECUTING"), statuses(session), "never COMPLETED: the reaper or a successor takes it");
        assertEquals(
                0,
                agent.count(
                        "SELECT COUNT(*) FROM session_event WHERE session_id = ? AND type = 'tool.completed'",
                        session));

        // a successor runs the call once
        SessionLease.Lease successor = leases.claim(session);
        assertNotNull(successor);
        long next = turns.begin(successor, 1, 1);
        assertEquals(
                "booked 5", executor.forTurn(successor, next, 1).execute(call("pausing_booking", "{\"amount\":5}")));
        assertEquals(1, ledgerRows(session));
        assertEquals(List.of("COMPLETED"), statuses(session));
        leases.release(successor);
    }

    @Test
    void a_read_only_call_finished_by_a_fenced_out_holder_never_enters_the_successors_context() throws Exception {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease old = leases.claim(session);
        long oldTurn = turns.begin(old, 1, 1);
        ExactlyOnceToolExecutor.TurnTools oldTools = executor.forTurn(old, oldTurn, 1);
        pausing.arm();
        CompletableFuture<String> paused =
                CompletableFuture.supplyAsync(() -> oldTools.execute(call("pausing_lookup", "{}")));
        assertTrue(pausing.awaitPaused());
        Thread.sleep(1500); // past the TTL
        SessionLease.Lease successor = leases.claim(session);
        assertNotNull(successor, "taken over");
        pausing.resume();
        ExecutionException e = assertThrows(ExecutionException.class, () -> paused.get(30, TimeUnit.SECONDS));
        assertInstanceOf(LeaseLostException.class, e.getCause());
        assertEquals(List.of("EXECUTING"), statuses(session), "the fenced-out holder could not complete it");
        assertEquals(List.of(), agent.bean(Conversation.class).load(successor).toolPairs());
        leases.release(successor);
    }

    @Test
    void a_call_without_a_tool_name_or_with_oversized_arguments_fails_readably_and_the_turn_goes_on() {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        long turnId = turns.begin(lease, 1, 1);
        ExactlyOnceToolExecutor.TurnTools tools = executor.forTurn(lease, turnId, 1);
        String huge = "{\"amount\":5,\"category\":\"food\",\"note\":\"" + "x".repeat(70_000) + "\"}";

        assertEquals("{\"error\":\"the tool call names no tool\"}", tools.execute(call(null, "{}")));
        assertEquals("{\"error\":\"the tool call names no tool\"}", tools.execute(call(" ", "{\"amount\":5}")));
        assertEquals(
                "{\"error\":\"arguments too large: " + huge.length() + " bytes, at most 65535\"}",
                tools.execute(book(huge)));
        // the turn goes on: the next call runs
        assertTrue(leases.heartbeat(lease)); // the TTL is 1 s
        assertEquals("booked 5.00 under food", tools.execute(book("{\"amount\":5,\"category\":\"food\"}")));
        assertEquals(List.of("FAILED", "FAILED", "FAILED", "COMPLETED"), statuses(session));
        assertEquals(
                List.of("", " ", "create_transaction", "create_transaction"),
                agent.jdbc.queryForList(
                        "SELECT tool_name FROM tool_execution WHERE session_id = ? ORDER BY id",
                        String.class,
                        session));
        assertEquals(
                "{\"omittedBytes\":" + huge.length() + "}",
                agent.jdbc.queryForObject(
                        "SELECT arguments_json FROM tool_execution WHERE session_id = ? AND ordinal = 1 AND tool_name = 'create_transaction' AND status = 'FAILED'",
                        String.class,
                        session));
        assertEquals(1, ledgerRows(session), "only the good call wrote");
        leases.release(lease);
    }

    @Test
    void the_same_arguments_spelled_three_ways_by_three_attempts_at_a_span_run_once() {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        List<String> spellings = List.of(
                "{\"amount\":35,\"category\":\"food\",\"note\":\"team\",\"meta\":{\"where\":{\"city\":\"Oslo\",\"geo\":{\"lat\":59.9,\"lon\":10.75}},\"tags\":[\"a\",{\"k\":1,\"j\":2}]}}",
                "{\"meta\":{\"tags\":[\"a\",{\"j\":2.0,\"k\":1}],\"where\":{\"geo\":{\"lon\":10.750,\"lat\":59.90},\"city\":\"Oslo\"}},\"note\":\"team\",\"category\":\"food\",\"amount\":35.0}",
                "{ \"category\" : \"food\",\n \"meta\" : { \"where\" : { \"geo\" : { \"lon\" : 1.075e1, \"lat\" : 5.99E1 }, \"city\" : \"Oslo\" },"
                        + " \"tags\" : [ \"a\", { \"k\" : 1e0, \"j\" : 0.2e1 } ] }, \"note\":\"team\", \"amount\" : 3.5e1 }");
        for (String args : spellings) {
            // each attempt at span 1 is a turn of its own (the earlier one discarded), counting ordinals afresh
            assertTrue(leases.heartbeat(lease)); // the TTL is 1 s
            long turnId = turns.begin(lease, 1, 1);
            assertEquals(
                    "booked 35.00 under food",
                    executor.forTurn(lease, turnId, 1).execute(book(args)),
                    args);
            turns.end(lease, turnId, Turns.Ending.DISCARDED, "superseded", Turns.Calls.NONE);
        }
        assertEquals(List.of("COMPLETED"), statuses(session), "one execution");
        assertEquals(1, ledgerRows(session), "one ledger row");
        leases.release(lease);
    }

    @Test
    void a_start_chosen_as_deadlock_victim_runs_again_instead_of_failing_the_turn() throws Exception {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        long turnId = turns.begin(lease, 1, 1);
        ToolExecutions executions = agent.bean(ToolExecutions.class);
        ToolExecutions.Execution row = executions.insertOrGet(new ToolExecutions.Call(
                session,
                turnId,
                1,
                "d".repeat(64),
                "call_d",
                "create_transaction",
                "{\"amount\":1,\"category\":\"food\"}",
                1,
                true,
                lease.token()));
        // this test is about locks, not the 1 s TTL
        agent.jdbc.update(
                "UPDATE chat_session SET lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL 1 HOUR WHERE id = ?", session);
        try (Connection other = agent.bean(DataSource.class).getConnection();
                Statement st = other.createStatement()) {
            other.setAutoCommit(false);
            // heavier than START (undo records), so InnoDB picks START as the victim of the cycle below
            for (int i = 0; i < 20; i++) {
                st.executeUpdate("INSERT INTO ledger_entry (session_id, execution_id, amount, category, created_at)"
                        + " VALUES (0, " + (-1 - i) + ", 1, 'other', UTC_TIMESTAMP(6))");
            }
            st.executeQuery("SELECT id FROM chat_session WHERE id = " + session + " FOR UPDATE")
                    .close();
            // START locks the execution row, then waits for the session row ...
            CompletableFuture<ToolExecutions.Start> start =
                    CompletableFuture.supplyAsync(() -> executions.tryStart(row.id(), turnId, lease.token()));
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(30);
            while (agent.count(
                            "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE '%SET t.status = ''EXECUTING''%'")
                    == 0) {
                assertTrue(System.nanoTime() < deadline, "START never waited");
                Thread.sleep(20);
            }
            // ... and this transaction asks for the execution row: a cycle, START is rolled back
            st.executeQuery("SELECT id FROM tool_execution WHERE id = " + row.id() + " FOR UPDATE")
                    .close();
            other.rollback();
            // the victim's second attempt either took the row or (when it ran before the rollback above) found it
            // held and said so without waiting; without the second attempt the deadlock would have been thrown
            ToolExecutions.Start again = start.get(30, TimeUnit.SECONDS);
            assertTrue(
                    again == ToolExecutions.Start.STARTED || again == ToolExecutions.Start.IN_FLIGHT,
                    "the START ran again instead of failing: " + again);
            if (again == ToolExecutions.Start.IN_FLIGHT) {
                assertEquals(ToolExecutions.Start.STARTED, executions.tryStart(row.id(), turnId, lease.token()));
            }
        }
        assertEquals("EXECUTING", executions.byId(row.id()).status());
        leases.release(lease);
    }

    @Test
    void a_holder_paused_past_the_ttl_cannot_record_its_side_effect() throws Exception {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        long turnId = turns.begin(lease, 1, 1);
        ExactlyOnceToolExecutor.TurnTools tools = executor.forTurn(lease, turnId, 1);
        Thread.sleep(1500); // paused past the TTL, no heartbeat
        assertThrows(LeaseLostException.class, () -> tools.execute(book("{\"amount\":35,\"category\":\"food\"}")));
        assertEquals(0, ledgerRows(session));
        assertEquals(0, agent.count("SELECT COUNT(*) FROM tool_execution WHERE session_id = ?", session));
    }

    @Test
    void a_holder_whose_call_was_taken_over_cannot_complete_it_and_the_successor_books_once() throws Exception {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease old = leases.claim(session);
        long oldTurn = turns.begin(old, 1, 1);
        ExactlyOnceToolExecutor.TurnTools oldTools = executor.forTurn(old, oldTurn, 1);
        // the old holder registered its call and started it, then paused past the TTL
        ToolExecutions executions = agent.bean(ToolExecutions.class);
        ToolExecutions.Execution row = executions.insertOrGet(new ToolExecutions.Call(
                session,
                oldTurn,
                1,
                ExactlyOnceToolExecutor.key(
                        session,
                        1,
                        "create_transaction\n" + CanonicalJson.of("{\"amount\":35,\"category\":\"food\"}"),
                        1),
                "call_1",
                "create_transaction",
                "{\"amount\":35,\"category\":\"food\"}",
                1,
                true,
                old.token()));
        assertTrue(executions.start(row.id(), oldTurn, old.token()));
        Thread.sleep(1500);
        // nobody took over yet, the call is still the old holder's: its expired lease alone fences it
        assertFalse(executions.complete(row.id(), "late", old.token()), "an expired lease completes nothing");
        assertEquals("EXECUTING", executions.byId(row.id()).status());

        SessionLease.Lease successor = leases.claim(session);
        long newTurn = turns.begin(successor, 1, 1);
        assertTrue(executions.start(row.id(), newTurn, successor.token()), "the successor takes the call over");
        assertFalse(executions.complete(row.id(), "late", old.token()), "the old token no longer owns the call");
        assertEquals("EXECUTING", executions.byId(row.id()).status());
        String result =
                executor.forTurn(successor, newTurn, 1).execute(book("{\"category\":\"food\",\"amount\":35.0}"));
        assertEquals("booked 35.00 under food", result);
        assertEquals(1, ledgerRows(session));

        // the old holder resumes: the recorded result is what it would see
        String seen = oldTools.execute(book("{\"amount\":35,\"category\":\"food\"}"));
        assertEquals("booked 35.00 under food", seen, "an already completed call returns its record, runs nothing");
        assertEquals(1, ledgerRows(session));
        assertEquals(1, agent.count("SELECT COUNT(*) FROM tool_execution WHERE session_id = ?", session));
        leases.release(successor);
    }

    @Test
    void the_reaper_fails_stuck_executions_and_a_later_turn_may_run_them_again() {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        long turnId = turns.begin(lease, 1, 1);
        ToolExecutions executions = agent.bean(ToolExecutions.class);
        String args = "{\"amount\":7,\"category\":\"coffee\"}";
        ToolExecutions.Execution row = executions.insertOrGet(new ToolExecutions.Call(
                session,
                turnId,
                1,
                ExactlyOnceToolExecutor.key(session, 1, "create_transaction\n" + CanonicalJson.of(args), 1),
                "call_1",
                "create_transaction",
                args,
                1,
                true,
                lease.token()));
        assertTrue(executions.start(row.id(), turnId, lease.token()));
        // started long ago by a holder that is gone: no live lease owns it
        agent.jdbc.update(
                "UPDATE tool_execution SET started_at = UTC_TIMESTAMP(6) - INTERVAL 2 HOUR, lease_token = 'dead-holder' WHERE id = ?",
                row.id());
        assertEquals(1, reaper.reap());
        ToolExecutions.Execution reaped = executions.byId(row.id());
        assertEquals("FAILED", reaped.status());
        assertTrue(reaped.retryable());
        assertTrue(reaped.result().contains("not applied"));
        assertEquals(0, ledgerRows(session));

        assertTrue(leases.heartbeat(lease)); // the TTL is 1 s
        String result = executor.forTurn(lease, turnId, 1).execute(book(args));
        assertEquals("booked 7.00 under coffee", result);
        assertEquals(1, ledgerRows(session));
        assertEquals("COMPLETED", executions.byId(row.id()).status());
        leases.release(lease);
    }

    @Test
    void the_reaper_leaves_slow_calls_of_a_live_holder_alone_and_they_complete() throws Exception {
        for (String tool : List.of("pausing_lookup", "pausing_booking")) {
            long session = agent.sessionWithMessages(1);
            SessionLease.Lease lease = leases.claim(session);
            agent.jdbc.update(
                    "UPDATE chat_session SET lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL 1 HOUR WHERE id = ?",
                    session);
            long turnId = turns.begin(lease, 1, 1);
            ExactlyOnceToolExecutor.TurnTools tools = executor.forTurn(lease, turnId, 1);
            pausing.arm();
            CompletableFuture<String> slow =
                    CompletableFuture.supplyAsync(() -> tools.execute(call(tool, "{\"amount\":5}")));
            assertTrue(pausing.awaitPaused());
            // a reaper whose timeout this call has run past, under a live lease
            agent.bean(ToolExecutions.class).reap(1);
            assertEquals(List.of("EXECUTING"), statuses(session), tool);
            pausing.resume();
            assertEquals(
                    tool.equals("pausing_lookup") ? "looked up" : "booked 5", slow.get(30, TimeUnit.SECONDS), tool);
            assertEquals(List.of("COMPLETED"), statuses(session), tool);
            assertEquals(tool.equals("pausing_lookup") ? 0 : 1, ledgerRows(session), tool);
            leases.release(lease);
        }
    }

    @Test
    void a_successor_waits_for_an_attempt_still_in_its_tool_transaction_and_then_books_once() throws Exception {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease old = leases.claim(session);
        long oldTurn = turns.begin(old, 1, 1);
        ExactlyOnceToolExecutor.TurnTools oldTools = executor.forTurn(old, oldTurn, 1);
        pausing.arm();
        CompletableFuture<String> paused =
                CompletableFuture.supplyAsync(() -> oldTools.execute(call("pausing_booking", "{\"amount\":6}")));
        assertTrue(pausing.awaitPaused());
        // the holder's lease runs out while its tool runs (the session row is not locked by the tool)
        agent.jdbc.update(
                "UPDATE chat_session SET lease_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE id = ?",
                session);
        SessionLease.Lease successor = leases.claim(session);
        assertNotNull(successor, "taken over while the old tool still runs");
        agent.jdbc.update(
                "UPDATE chat_session SET lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL 1 HOUR WHERE id = ?", session);
        long next = turns.begin(successor, 1, 1);
        ToolExecutions executions = agent.bean(ToolExecutions.class);
        long execution =
                agent.jdbc.queryForObject("SELECT id FROM tool_execution WHERE session_id = ?", Long.class, session);
        assertEquals(
                ToolExecutions.Start.IN_FLIGHT,
                executions.tryStart(execution, next, successor.token()),
                "the old attempt's transaction holds the call: its outcome is not known yet");
        CompletableFuture<String> again = CompletableFuture.supplyAsync(
                () -> executor.forTurn(successor, next, 1).execute(call("pausing_booking", "{\"amount\":6}")));
        pausing.resume();
        ExecutionException e = assertThrows(ExecutionException.class, () -> paused.get(30, TimeUnit.SECONDS));
        assertInstanceOf(LeaseLostException.class, e.getCause(), "the old attempt's fence failed at its commit");
        assertEquals("booked 6", again.get(30, TimeUnit.SECONDS));
        assertEquals(1, ledgerRows(session), "one effect");
        assertEquals(List.of("COMPLETED"), statuses(session));
        leases.release(successor);
    }

    @Test
    void conversation_context_holds_only_finished_pairs() {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        long turnId = turns.begin(lease, 1, 1);
        ExactlyOnceToolExecutor.TurnTools tools = executor.forTurn(lease, turnId, 1);
        tools.execute(book("{\"amount\":3,\"category\":\"coffee\"}"));
        assertTrue(leases.heartbeat(lease)); // the TTL is 1 s
        ToolExecutions executions = agent.bean(ToolExecutions.class);
        executions.insertOrGet(new ToolExecutions.Call(
                session,
                turnId,
                1,
                "f".repeat(64),
                "call_9",
                "create_transaction",
                "{\"amount\":9,\"category\":\"food\"}",
                1,
                true,
                lease.token()));
        Conversation.Snapshot snapshot = agent.bean(Conversation.class).load(lease);
        assertEquals(1, snapshot.toolPairs().size(), "the PENDING call is not in the context");
        assertEquals("booked 3.00 under coffee", snapshot.toolPairs().getFirst().result());
        leases.release(lease);
    }
}
