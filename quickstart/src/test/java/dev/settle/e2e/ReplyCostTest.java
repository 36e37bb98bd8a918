package dev.settle.e2e;

import dev.settle.debounce.PacingRule;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import dev.settle.testsupport.SqlTrace;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * What one reply costs in SQL across the three applications (issue 18's budget: ≤ 25 statements, ≤ 5
 * transactions), counted statement by statement with {@link SqlTrace}: a single message, no tools, a model that
 * answers at once. A statement is the reply's unless a background loop ran it and it found nothing (an idle poll),
 * it only looked ahead (the timer firer's sleep length) or it was a lease renewal round (one per heartbeat period for
 * every lease the worker holds; the reply's short turn falls in one only by chance): those cost per second, not per
 * reply, and are reported apart ({@link SqlTrace.Statement#idlePoll()}). A transaction is a COMMIT, or a write that
 * committed on its own (autocommit, no START TRANSACTION). No statement of ingest-api's transaction is sent from a
 * virtual thread, and the agent's reply holds the session row over four statements only (docs/ARCHITECTURE.md,
 * "Threads and transactions"); so do a booking's and a discarded turn's transactions.
 */
class ReplyCostTest {
    static SettleSystem settle;

    @BeforeAll
    static void start() {
        settle = SettleSystem.traced("cost", Map.of());
    }

    @AfterAll
    static void stop() {
        settle.close();
    }

    @Test
    void one_reply_costs_its_budget_of_statements_and_transactions() {
        String warm = SettleSystem.newSessionId(); // the first reply of a JVM also fills caches
        answer(warm, "warm up", 1);

        Map<String, List<SqlTrace.Statement>> byApp = measure(SettleSystem.newSessionId(), "hello", 1);
        assertBudget(byApp);
    }

    /**
     * A returning session whose pauses have settled (its ring full of zeros, as single-message bursts leave it, and
     * its tenant's too) costs what a first reply costs: its pacing is unchanged, so nothing of it is written.
     */
    @Test
    void a_settled_returning_sessions_reply_costs_the_same() {
        String s = SettleSystem.newSessionId();
        answer(s, "first", 1);
        String zeros = String.join(",", Collections.nCopies(PacingRule.SAMPLES, "0"));
        settle.jdbc.update("""
                INSERT INTO session_pacing (session_id, samples, window_micros, window_cause, last_message_at,
                                            burst_messages, updated_at)
                SELECT s.id, ?, ?, 'base', s.last_message_at, 1, UTC_TIMESTAMP(6) FROM chat_session s
                 WHERE s.external_id = ?""", zeros, SettleSystem.WINDOW.toNanos() / 1_000, s);
        settle.jdbc.update("""
                INSERT INTO tenant_pacing (tenant_id, samples, updated_at)
                SELECT s.tenant_id, ?, UTC_TIMESTAMP(6) FROM chat_session s WHERE s.external_id = ?
                ON DUPLICATE KEY UPDATE samples = VALUES(samples)""", zeros, s);

        Map<String, List<SqlTrace.Statement>> byApp = measure(s, "again", 2);
        assertBudget(byApp);
    }

    /**
     * A side-effecting tool call's transaction (the call's own writes, its record and its event) holds the session
     * row over its event, its record and its commit only: the event's guarded seq reservation is the fence.
     */
    @Test
    void a_booking_holds_the_session_row_over_its_event_its_record_and_its_commit() {
        String s = SettleSystem.newSessionId();
        String booking = "book lunch " + s;
        settle.model.respondWith(r -> r.body().contains(booking) && SlowToolTest.toolResults(r) == 0
                ? ModelResponse.toolCall("create_transaction", "{\"amount\":12,\"category\":\"food\"}")
                : ModelResponse.text("Booked."));
        try {
            Map<String, List<SqlTrace.Statement>> byApp = measure(s, booking, 1);
            assertEquals(
                    List.of("UPDATE chat_session s", "INSERT INTO session_event", "UPDATE tool_execution t", "COMMIT"),
                    underSessionLock(byApp.get("agent-worker"), "INSERT INTO ledger_entry"),
                    report(byApp));
        } finally {
            settle.model.respondWith(ModelDouble::echo);
        }
    }

    /**
     * A turn interrupted by a newer message is discarded in a transaction that holds the session row over its
     * events, the turn's end and the commit only: the events' guarded seq reservation is the fence.
     */
    @Test
    void a_discarded_turn_holds_the_session_row_over_its_events_its_end_and_its_commit() {
        String s = SettleSystem.newSessionId();
        String first = "first " + s;
        settle.model.respondWith(r -> r.body().contains(first) && !r.body().contains("second " + s)
                ? ModelResponse.text("a long answer that streams slowly enough to be interrupted")
                        .chunkSize(4)
                        .chunkDelay(Duration.ofMillis(200))
                : ModelResponse.text("Both answered."));
        try {
            Map<String, List<SqlTrace.Statement>> byApp = measure(() -> {
                settle.post(s, first);
                await("the first turn is streaming")
                        .atMost(Duration.ofSeconds(30))
                        .pollInSameThread()
                        .until(() -> settle.jdbc.queryForObject("""
                                        SELECT COUNT(*) FROM session_event e JOIN chat_session c ON c.id = e.session_id
                                         WHERE c.external_id = ? AND e.type = 'reply.delta'""", Integer.class, s) > 0);
                answer(s, "second " + s, 1);
            });
            assertEquals(
                    List.of("UPDATE chat_session s", "INSERT INTO session_event", "UPDATE chat_turn t", "COMMIT"),
                    underSessionLock(
                            byApp.get("agent-worker"),
                            "UPDATE chat_turn t JOIN chat_session s ON s.id = t.session_id SET t.state"),
                    report(byApp));
        } finally {
            settle.model.respondWith(ModelDouble::echo);
            // the burst taught the tenant's pacing ring a gap: forgotten, so that the other tests' first messages
            // cost what a first message costs
            settle.jdbc.update("DELETE FROM tenant_pacing");
        }
    }

    private static void assertBudget(Map<String, List<SqlTrace.Statement>> byApp) {
        String report = report(byApp);
        assertEquals(6, byApp.get("ingest-api").size(), report);
        assertEquals(1, transactions(byApp.get("ingest-api")), report);
        assertEquals(6, byApp.get("debounce-worker").size(), report);
        assertEquals(2, transactions(byApp.get("debounce-worker")), report);
        assertEquals(12, byApp.get("agent-worker").size(), report);
        assertEquals(4, transactions(byApp.get("agent-worker")), report);
        assertEquals(
                List.of("UPDATE chat_session s", "INSERT INTO session_event", "INSERT INTO chat_message", "COMMIT"),
                underSessionLock(byApp.get("agent-worker"), "UPDATE chat_session s STRAIGHT_JOIN"),
                "the reply's transaction holds the session row from its guarded UPDATE to its COMMIT over these "
                        + "statements only (the webhook's outbox rows are written before it)\n" + report);
        // the accept's rows stay locked while a virtual thread waits for a carrier between its statements
        List<String> fromVirtualThreads = byApp.get("ingest-api").stream()
                .filter(st -> st.inTransaction() && st.virtualThread())
                .map(SqlTrace.Statement::shape)
                .toList();
        assertEquals(
                List.of(),
                fromVirtualThreads,
                "ingest-api's statements of transactions sent from virtual threads\n" + report);
    }

    /** Posts {@code text} and waits until the session's {@code replies}-th reply was delivered and all is quiet. */
    private static void answer(String sessionId, String text, int replies) {
        settle.post(sessionId, text);
        await().atMost(Duration.ofSeconds(30))
                .pollInSameThread()
                .until(() -> settle.webhooks(sessionId).size() == replies);
        settle.awaitQuiescent(Duration.ofSeconds(30));
    }

    /** The statements of the applications while one message is answered, by application (idle polls left out). */
    private static Map<String, List<SqlTrace.Statement>> measure(String sessionId, String text, int replies) {
        return measure(() -> answer(sessionId, text, replies));
    }

    /** The statements of the applications while {@code scenario} runs, by application (idle polls left out). */
    private static Map<String, List<SqlTrace.Statement>> measure(Runnable scenario) {
        String test = Thread.currentThread().getName();
        SqlTrace.start();
        scenario.run();
        List<SqlTrace.Statement> all = SqlTrace.stop().stream()
                .filter(st -> !st.thread().equals(test) && !st.thread().startsWith("awaitility"))
                .toList();
        List<SqlTrace.Statement> reply =
                all.stream().filter(st -> !st.idlePoll()).toList();
        Map<String, List<SqlTrace.Statement>> byApp = reply.stream()
                .collect(Collectors.groupingBy(SqlTrace.Statement::app, TreeMap::new, Collectors.toList()));
        System.out.println(report(byApp) + "idle polls while it ran (not counted): " + (all.size() - reply.size()));
        return byApp;
    }

    private static String report(Map<String, List<SqlTrace.Statement>> byApp) {
        StringBuilder report = new StringBuilder("one reply, statement by statement:\n");
        byApp.forEach((app, list) -> {
            report.append("== ")
                    .append(app)
                    .append(": ")
                    .append(list.size())
                    .append(" statements, ")
                    .append(transactions(list))
                    .append(" transactions\n");
            list.forEach(st -> report.append("   ")
                    .append(st.endsTransaction() ? "T " : "  ")
                    .append(st.shape(), 0, Math.min(140, st.shape().length()))
                    .append('\n'));
        });
        return report.toString();
    }

    /**
     * The statements of the transaction that sent the first statement starting with {@code marker}, from its first
     * statement that locks the session row (an {@code UPDATE} of it, or its {@code SELECT … FOR UPDATE}) to its
     * COMMIT, each by its first three words: the round trips every {@code POST} of the session may wait through.
     */
    private static List<String> underSessionLock(List<SqlTrace.Statement> statements, String marker) {
        SqlTrace.Statement sent = statements.stream()
                .filter(st -> st.shape().startsWith(marker))
                .findFirst()
                .orElseThrow(() -> new AssertionError("no statement " + marker));
        List<SqlTrace.Statement> thread = statements.stream()
                .filter(st -> st.threadId() == sent.threadId())
                .toList();
        int begin = thread.indexOf(sent);
        while (begin > 0 && !thread.get(begin).shape().equals("START TRANSACTION")) {
            begin--;
        }
        List<String> held = new java.util.ArrayList<>();
        for (SqlTrace.Statement st : thread.subList(begin, thread.size())) {
            if (!held.isEmpty()
                    || st.shape().startsWith("UPDATE chat_session")
                    || st.shape().startsWith("SELECT s.id FROM chat_session")) {
                String[] words = st.shape().split(" ", 4);
                held.add(String.join(" ", java.util.Arrays.asList(words).subList(0, Math.min(3, words.length))));
            }
            if (st.isCommit()) {
                break;
            }
        }
        return held;
    }

    static long transactions(List<SqlTrace.Statement> statements) {
        return statements.stream().filter(SqlTrace.Statement::endsTransaction).count();
    }
}
