package dev.settle.agent.tools;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.settle.agent.Conversation;
import dev.settle.agent.LeaseLostException;
import dev.settle.agent.SessionLease;
import dev.settle.agent.TestAgent;
import dev.settle.agent.Turns;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The tool level of the fence, driven directly on a real agent-worker context (lease TTL 1 s). */
class ToolFencingTest {
    static TestAgent agent;
    static SessionLease leases;
    static Turns turns;
    static ExactlyOnceToolExecutor executor;
    static ToolReaper reaper;

    @BeforeAll
    static void start() {
        agent = new TestAgent("toolfence", Map.of("settle.lease.ttl", "1s", "settle.agent.tool-timeout", "1h"));
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
        return ToolExecutionRequest.builder().id("call_1").name("create_transaction").arguments(args).build();
    }

    int ledgerRows(long session) {
        return agent.count("SELECT COUNT(*) FROM ledger_entry WHERE session_id = ?", session);
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
        ToolExecutions.Execution row = executions.insertOrGet(new ToolExecutions.Call(session, oldTurn, 1,
                ExactlyOnceToolExecutor.key(session, 1, "create_transaction\n" + CanonicalJson.of("{\"amount\":35,\"category\":\"food\"}"), 1),
                "call_1", "create_transaction", "{\"amount\":35,\"category\":\"food\"}", 1, true, old.token()));
        assertTrue(executions.start(row.id(), oldTurn, old.token()));
        Thread.sleep(1500);

        SessionLease.Lease successor = leases.claim(session);
        long newTurn = turns.begin(successor, 1, 1);
        String result = executor.forTurn(successor, newTurn, 1).execute(book("{\"category\":\"food\",\"amount\":35.0}"));
        assertEquals("booked 35.00 under food", result);
        assertEquals(1, ledgerRows(session));

        // the old holder resumes: its writes are fenced, the recorded result is what it would see
        assertEquals(false, executions.complete(row.id(), "late", old.token()), "the old token no longer owns the call");
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
        ToolExecutions.Execution row = executions.insertOrGet(new ToolExecutions.Call(session, turnId, 1,
                ExactlyOnceToolExecutor.key(session, 1, "create_transaction\n" + CanonicalJson.of(args), 1),
                "call_1", "create_transaction", args, 1, true, lease.token()));
        assertTrue(executions.start(row.id(), turnId, lease.token()));
        agent.jdbc.update("UPDATE tool_execution SET started_at = UTC_TIMESTAMP(6) - INTERVAL 2 HOUR WHERE id = ?", row.id());
        assertEquals(1, reaper.reap());
        ToolExecutions.Execution reaped = executions.byId(row.id());
        assertEquals("FAILED", reaped.status());
        assertTrue(reaped.retryable());
        assertTrue(reaped.result().contains("not applied"));
        assertEquals(0, ledgerRows(session));

        String result = executor.forTurn(lease, turnId, 1).execute(book(args));
        assertEquals("booked 7.00 under coffee", result);
        assertEquals(1, ledgerRows(session));
        assertEquals("COMPLETED", executions.byId(row.id()).status());
        leases.release(lease);
    }

    @Test
    void conversation_context_holds_only_finished_pairs() {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        long turnId = turns.begin(lease, 1, 1);
        ExactlyOnceToolExecutor.TurnTools tools = executor.forTurn(lease, turnId, 1);
        tools.execute(book("{\"amount\":3,\"category\":\"coffee\"}"));
        ToolExecutions executions = agent.bean(ToolExecutions.class);
        executions.insertOrGet(new ToolExecutions.Call(session, turnId, 1, "f".repeat(64), "call_9", "create_transaction",
                "{\"amount\":9,\"category\":\"food\"}", 1, true, lease.token()));
        Conversation.Snapshot snapshot = agent.bean(Conversation.class).load(lease);
        assertEquals(1, snapshot.toolPairs().size(), "the PENDING call is not in the context");
        assertEquals("booked 3.00 under coffee", snapshot.toolPairs().getFirst().result());
        leases.release(lease);
    }
}
