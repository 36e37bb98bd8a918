package dev.settle.agent;

import dev.settle.agent.lease.SessionLease;
import dev.settle.agent.stream.TurnStream;
import dev.settle.agent.stream.TurnStreams;
import dev.settle.agent.tools.ToolExecutions;
import dev.settle.agent.turn.Conversation;
import dev.settle.agent.turn.InterruptWatcher;
import dev.settle.agent.turn.MessageTail;
import dev.settle.agent.turn.OrphanedLeaseScanner;
import dev.settle.agent.turn.ReplyCommit;
import dev.settle.agent.turn.TurnFailure;
import dev.settle.agent.turn.Turns;
import dev.settle.agent.turn.WorkWaker;
import dev.settle.agent.webhook.AttemptVerdict;
import dev.settle.agent.webhook.DeliveryQueue;
import dev.settle.agent.webhook.WebhookDispatcher;
import dev.settle.agent.webhook.WebhookEndpoints;
import dev.settle.embedded.AppLauncher;
import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Duration;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The agent worker's SQL, one abstract suite run on every database the project supports (tiny subclasses per database
 * say how to reach it): lease claim/renew/release and fencing, turn begin/commit/discard/fail, tool executions, the
 * reply commit with its outbox row and events, the timer re-arm, the orphan scan, the interrupt check, the streamed
 * chunks, and the webhook claim with its per-session order and the endpoint upsert. The worker starts for real on the
 * database (its changelog creates the schema); its Kafka listener and webhook dispatcher stay off so that every count is
 * exact.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class AgentContract {
    ConfigurableApplicationContext context;
    JdbcTemplate jdbc;
    SessionLease leases;

    /** spring.datasource.url / username / password of the database under test. */
    abstract Map<String, Object> database();

    @BeforeAll
    void start() {
        Map<String, Object> props = new HashMap<>();
        props.put("spring.kafka.bootstrap-servers", SharedInfra.kafkaBootstrap());
        props.put("server.port", "0");
        props.put("spring.kafka.consumer.group-id", "agent-contract-" + UUID.randomUUID());
        props.put("spring.kafka.listener.auto-startup", "false");
        props.put("settle.agent.orphan-scan", "false");
        props.put("settle.lease.ttl", "30s");
        props.putAll(database());
        context = AppLauncher.run(AgentWorkerApplication.class, AgentWorkerApplication.defaultProperties(), props);
        context.getBean(WebhookDispatcher.class).stop();
        jdbc = context.getBean(JdbcTemplate.class);
        leases = context.getBean(SessionLease.class);
    }

    @AfterAll
    void stop() {
        if (context != null) {
            context.close();
        }
    }

    long sessionWithMessages(int version) {
        String external = "contract-" + UUID.randomUUID();
        jdbc.update("""
                INSERT INTO chat_session (external_id, version, oldest_unanswered_at, last_message_at, created_at)
                VALUES (?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))""", external, version);
        long id = jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, external);
        for (int v = 1; v <= version; v++) {
            jdbc.update("""
                    INSERT INTO chat_message (message_uid, session_id, role, text, version, created_at)
                    VALUES (?, ?, 'user', ?, ?, UTC_TIMESTAMP(6))""", "msg_" + UUID.randomUUID(), id, "message " + v, v);
        }
        return id;
    }

    void newMessage(long session) {
        jdbc.update("""
                UPDATE chat_session SET version = version + 1, last_message_at = UTC_TIMESTAMP(6),
                       oldest_unanswered_at = COALESCE(oldest_unanswered_at, UTC_TIMESTAMP(6))
                 WHERE id = ?""", session);
        long v = jdbc.queryForObject("SELECT version FROM chat_session WHERE id = ?", Long.class, session);
        jdbc.update("""
                INSERT INTO chat_message (message_uid, session_id, role, text, version, created_at)
                VALUES (?, ?, 'user', ?, ?, UTC_TIMESTAMP(6))""", "msg_" + UUID.randomUUID(), session, "message " + v, v);
    }

    long count(String sql, Object... args) {
        return jdbc.queryForObject(sql, Long.class, args);
    }

    void expireLease(long session) {
        jdbc.update(
                "UPDATE chat_session SET lease_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE id = ?",
                session);
    }

    @Test
    void the_lease_is_claimed_once_renewed_released_and_taken_over_with_a_new_epoch_that_fences_the_old_holder() {
        long session = sessionWithMessages(2);
        SessionLease.Lease first = leases.claim(session);
        assertNotNull(first);
        assertEquals(1, first.epoch());
        assertNull(leases.claim(session), "a live lease is exclusive");
        assertTrue(leases.heartbeat(first));
        assertEquals(Set.of(first.token()), leases.renewAll(jdbc, List.of(first)));
        Boolean locked = new TransactionTemplate(new JdbcTransactionManager(jdbc.getDataSource()))
                .execute(s -> leases.lockHeld(first));
        assertEquals(Boolean.TRUE, locked);

        expireLease(session);
        assertEquals(
                List.of(session),
                jdbc.queryForList(OrphanedLeaseScanner.ORPHANS, Long.class, 1000).stream()
                        .filter(id -> id == session)
                        .toList(),
                "an expired lease with work left is an orphan");
        SessionLease.Lease second = leases.claim(session);
        assertNotNull(second, "an expired lease is taken over");
        assertEquals(2, second.epoch());
        assertFalse(leases.heartbeat(first), "the old holder is fenced");
        assertEquals(Set.of(), leases.renewAll(jdbc, List.of(first)));
        leases.release(first);
        assertEquals(
                second.token(),
                jdbc.queryForObject("SELECT lease_token FROM chat_session WHERE id = ?", String.class, session),
                "a fenced release changes nothing");
        leases.release(second);
        assertNull(jdbc.queryForObject("SELECT lease_token FROM chat_session WHERE id = ?", String.class, session));

        jdbc.update("UPDATE chat_session SET replied_version = version WHERE id = ?", session);
        assertNull(leases.claim(session), "nothing to answer: nothing to claim");
    }

    @Test
    void the_scanner_learns_when_a_lease_that_missed_its_renewal_expires() {
        long session = sessionWithMessages(1);
        assertNotNull(leases.claim(session));
        jdbc.update(
                "UPDATE chat_session SET lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL 2 SECOND WHERE id = ?",
                session);
        Long micros = jdbc.queryForObject(OrphanedLeaseScanner.NEXT_EXPIRY, Long.class, 3_000_000L);
        assertNotNull(micros, "a live lease with less left than the bound");
        assertTrue(micros > 0 && micros <= 2_000_000, "expires within its 2 s: " + micros);
        jdbc.update("UPDATE chat_session SET replied_version = version WHERE id = ?", session);
    }

    @Test
    void a_turn_streams_commits_its_reply_with_the_outbox_row_and_events_and_a_newer_message_supersedes_the_next() {
        long session = sessionWithMessages(2);
        SessionLease.Lease lease = leases.claim(session);
        Conversation.Snapshot snapshot = context.getBean(Conversation.class).load(lease);
        assertEquals(1, snapshot.fromVersion());
        assertEquals(2, snapshot.toVersion());
        assertEquals(2, snapshot.pending().size());
        Turns turns = context.getBean(Turns.class);
        Long turn = turns.begin(lease, snapshot.fromVersion(), snapshot.toVersion(), snapshot.abandoned());
        assertNotNull(turn);

        TurnStream stream = context.getBean(TurnStreams.class)
                .open(lease, turn, Turns.started(turn, snapshot.fromVersion(), snapshot.toVersion()));
        stream.delta("Hello, ");
        stream.sync();
        stream.delta("world");
        TurnStream.Rest rest = stream.handOver();
        stream.close();
        assertEquals("Hello, world", rest.text());
        assertEquals(2, rest.deltas());
        assertEquals(1, rest.events().size(), "the second delta is left to the commit");

        ReplyCommit.Result committed =
                context.getBean(ReplyCommit.class).commit(lease, turn, snapshot, rest, Turns.Calls.NONE.plus(10, 4, 5));
        assertEquals(ReplyCommit.Outcome.COMMITTED, committed.outcome());
        assertFalse(committed.waiting());
        assertNull(
                jdbc.queryForObject("SELECT lease_token FROM chat_session WHERE id = ?", String.class, session),
                "the commit released the lease");
        lease = leases.claim(session);
        assertNull(lease, "nothing left to answer");
        assertEquals(2, count("SELECT replied_version FROM chat_session WHERE id = ?", session));
        assertEquals(
                1,
                count(
                        "SELECT COUNT(*) FROM chat_message WHERE session_id = ? AND role = 'assistant' AND covers_version = 2",
                        session));
        assertEquals("COMMITTED", jdbc.queryForObject("SELECT state FROM chat_turn WHERE id = ?", String.class, turn));
        assertEquals(15, count("SELECT prompt_tokens + completion_tokens FROM chat_turn WHERE id = ?", turn));
        assertEquals(4, count("SELECT cached_tokens FROM chat_turn WHERE id = ?", turn));
        assertEquals(
                1, count("SELECT COUNT(*) FROM webhook_delivery WHERE session_id = ? AND status = 'PENDING'", session));
        assertEquals(
                List.of("turn.started", "reply.delta", "reply.delta", "reply.created"),
                jdbc.queryForList(
                        "SELECT type FROM session_event WHERE session_id = ? ORDER BY seq", String.class, session));
        assertEquals(
                List.of(1L, 2L, 3L, 4L),
                jdbc.queryForList(
                        "SELECT seq FROM session_event WHERE session_id = ? ORDER BY seq", Long.class, session));

        newMessage(session);
        lease = leases.claim(session);
        Conversation.Snapshot next = context.getBean(Conversation.class).load(lease);
        assertEquals(3, next.fromVersion());
        assertEquals(
                1,
                next.history().stream()
                        .filter(m -> m.role().equals("assistant"))
                        .count());
        Long nextTurn = turns.begin(lease, next.fromVersion(), next.toVersion(), next.abandoned());
        newMessage(session);
        assertEquals(
                List.of(4L),
                jdbc.query(
                        InterruptWatcher.CHECK.formatted("(s.id = ? AND s.version > ?)"),
                        (rs, i) -> rs.getLong("version"),
                        session,
                        next.toVersion(),
                        "merge",
                        60_000_000L),
                "the interrupt check sees the newer message");
        long before = count("SELECT id FROM chat_message WHERE session_id = ? AND version = 3", session);
        assertEquals(
                List.of(4L),
                jdbc
                        .query(
                                MessageTail.READ,
                                (rs, i) -> List.of(rs.getLong("session_id"), rs.getLong("version")),
                                before)
                        .stream()
                        .filter(row -> row.get(0) == session)
                        .map(row -> row.get(1))
                        .toList(),
                "the interrupt watcher's tail reads the newer message");
        long newest = jdbc.queryForObject(MessageTail.START, Long.class, 0L);
        assertEquals(
                0,
                count(
                        "SELECT COUNT(*) FROM chat_message WHERE created_at > (SELECT created_at FROM chat_message WHERE id = ?)",
                        newest),
                "where the tail starts: the newest message created at least the lag ago (here 0)");
        assertEquals(
                List.of(),
                jdbc.queryForList(MessageTail.START, Long.class, 100L * 365 * 24 * 3600 * 1_000_000),
                "no message is a century old");
        assertEquals(
                ReplyCommit.Outcome.SUPERSEDED,
                context.getBean(ReplyCommit.class)
                        .commit(lease, nextTurn, next, new TurnStream.Rest(List.of(), 0, "stale"), Turns.Calls.NONE)
                        .outcome());
        assertTrue(turns.discard(lease, nextTurn, "superseded", Turns.Spent.NONE, Turns.Calls.NONE));
        assertEquals(
                "DISCARDED", jdbc.queryForObject("SELECT state FROM chat_turn WHERE id = ?", String.class, nextTurn));
        assertEquals(2, count("SELECT replied_version FROM chat_session WHERE id = ?", session));

        leases.release(lease);
        context.getBean(WorkWaker.class).rearmIfPending(session);
        context.getBean(WorkWaker.class).rearmIfPending(session);
        assertEquals(
                1,
                count(
                        "SELECT COUNT(*) FROM debounce_timer WHERE session_id = ? AND armed_version = 4 AND armed_by = 'agent'",
                        session));
        assertEquals(
                1,
                count(
                        "SELECT COUNT(*) FROM debounce_timer d JOIN chat_session s ON s.id = d.session_id"
                                + " WHERE d.session_id = ? AND d.last_message_at = s.last_message_at",
                        session),
                "the re-armed timer remembers the last message, so that older typing signals do not hold it");
    }

    @Test
    void a_failed_turn_marks_the_session_and_a_fenced_holder_cannot_commit_or_fail() {
        long session = sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        Conversation.Snapshot snapshot = context.getBean(Conversation.class).load(lease);
        Turns turns = context.getBean(Turns.class);
        Long turn = turns.begin(lease, snapshot.fromVersion(), snapshot.toVersion(), snapshot.abandoned());
        assertTrue(context.getBean(TurnFailure.class).record(lease, turn, snapshot, "model down", Turns.Calls.NONE));
        assertEquals(1, count("SELECT failed_version FROM chat_session WHERE id = ?", session));
        assertEquals("FAILED", jdbc.queryForObject("SELECT state FROM chat_turn WHERE id = ?", String.class, turn));
        leases.release(lease);

        newMessage(session);
        SessionLease.Lease old = leases.claim(session);
        Conversation.Snapshot seen = context.getBean(Conversation.class).load(old);
        Long oldTurn = turns.begin(old, seen.fromVersion(), seen.toVersion(), seen.abandoned());
        expireLease(session);
        SessionLease.Lease taker = leases.claim(session);
        assertNotNull(taker);
        assertEquals(
                ReplyCommit.Outcome.LEASE_LOST,
                context.getBean(ReplyCommit.class)
                        .commit(old, oldTurn, seen, new TurnStream.Rest(List.of(), 0, "late"), Turns.Calls.NONE)
                        .outcome());
        assertFalse(turns.end(old, oldTurn, Turns.Ending.FAILED, "late", Turns.Calls.NONE));
        assertEquals(
                0, count("SELECT COUNT(*) FROM chat_message WHERE session_id = ? AND role = 'assistant'", session));
        Conversation.Snapshot taken = context.getBean(Conversation.class).load(taker);
        assertTrue(taken.abandoned(), "the taker sees the RUNNING turn its predecessor left");
        Long takerTurn = turns.begin(taker, taken.fromVersion(), taken.toVersion(), true);
        assertNotNull(takerTurn);
        assertEquals(
                "FAILED",
                jdbc.queryForObject("SELECT state FROM chat_turn WHERE id = ?", String.class, oldTurn),
                "the abandoned turn is closed by the taker");
        leases.release(taker);
    }

    @Test
    void a_tool_execution_is_recorded_once_per_key_guarded_by_the_lease_and_reaped_when_no_live_lease_owns_it() {
        ToolExecutions executions = context.getBean(ToolExecutions.class);
        long session = sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        Long turn = context.getBean(Turns.class).begin(lease, 1, 1, false);
        String key = "k".repeat(64 - 8) + Long.toHexString(session | 0x10000000L);
        ToolExecutions.Call call = new ToolExecutions.Call(
                session, turn, 1, key, "call_1", "create_transaction", "{\"amount\":35}", 0, true, lease.token());
        ToolExecutions.Execution row = executions.insertOrGet(call);
        assertEquals("PENDING", row.status());
        assertEquals(row.id(), executions.insertOrGet(call).id(), "the same key is the same execution");
        assertTrue(executions.start(row.id(), turn, lease.token()));
        jdbc.update(
                "INSERT INTO ledger_entry (session_id, execution_id, amount, category, note, created_at) "
                        + "VALUES (?, ?, 35.00, 'food', 'lunch', UTC_TIMESTAMP(6))",
                session,
                row.id());
        assertTrue(executions.complete(row.id(), "{\"ok\":true}", lease.token()));
        assertFalse(executions.complete(row.id(), "{\"ok\":true}", "someone-else"));
        assertEquals(
                List.of(row.id()),
                executions.completedPairs(session, 1).stream()
                        .map(ToolExecutions.Execution::id)
                        .toList());

        ToolExecutions.Execution stuck = executions.insertOrGet(
                new ToolExecutions.Call(session, turn, 1, null, "call_2", "lookup", "{}", 0, false, lease.token()));
        assertTrue(executions.start(stuck.id(), turn, lease.token()));
        jdbc.update(
                "UPDATE tool_execution SET started_at = UTC_TIMESTAMP(6) - INTERVAL 1 HOUR WHERE id = ?", stuck.id());
        assertEquals(0, executions.reap(Duration.ofMinutes(30).toNanos() / 1000), "a slow call of a live holder stays");
        assertEquals("EXECUTING", executions.byId(stuck.id()).status());

        expireLease(session);
        assertEquals(1, executions.reap(Duration.ofMinutes(30).toNanos() / 1000), "no live lease owns it: reaped");
        assertEquals("FAILED", executions.byId(stuck.id()).status());
        assertTrue(executions.byId(stuck.id()).retryable());
        assertNull(
                executions.insertOrGet(new ToolExecutions.Call(
                        session, turn, 1, null, "call_3", "lookup", "{}", 1, false, lease.token())),
                "no row without a live lease");
        assertFalse(executions.start(stuck.id(), turn, lease.token()));
    }

    @Test
    void the_webhook_claim_keeps_the_per_session_order_and_each_claim_is_exclusive() {
        DeliveryQueue queue = context.getBean(DeliveryQueue.class);
        long session = sessionWithMessages(1);
        long other = sessionWithMessages(1);
        long first = delivery(session);
        long second = delivery(session);
        long elsewhere = delivery(other);
        List<Long> due = queue.due(100, null).ids();
        assertTrue(
                due.containsAll(List.of(first, elsewhere)) && !due.contains(second), "first of each session: " + due);

        assertNull(queue.claim(second, Duration.ofSeconds(30), null), "not first in its session");
        DeliveryQueue.Claim claim = queue.claim(first, Duration.ofSeconds(30), null);
        assertNotNull(claim);
        assertEquals(1, claim.attempt());
        assertTrue(claim.followed(), "the second waits for it");
        assertNull(queue.claim(first, Duration.ofSeconds(30), null), "claimed once");
        assertNull(queue.claim(second, Duration.ofSeconds(30), null), "the first is in flight");
        DeliveryQueue.Claim alone = queue.claim(elsewhere, Duration.ofSeconds(30), null);
        assertNotNull(alone, "another session is not held up");
        assertFalse(alone.followed(), "nothing waits for it");

        assertTrue(
                queue.finish(claim, 500, 1000, "HTTP 500", new AttemptVerdict.Retry(Duration.ZERO, 500, "HTTP 500")));
        assertNull(queue.claim(second, Duration.ofSeconds(30), null), "the first is still pending");
        DeliveryQueue.Claim again = queue.claim(first, Duration.ofSeconds(30), null);
        assertEquals(2, again.attempt());
        assertTrue(queue.finish(again, 200, 1000, null, new AttemptVerdict.Delivered(200)));
        assertFalse(queue.finish(again, 200, 1000, null, new AttemptVerdict.Delivered(200)), "the claim is spent");
        DeliveryQueue.Claim next = queue.claim(second, Duration.ofSeconds(30), null);
        assertNotNull(next, "the second goes once the first is delivered");
        assertFalse(next.followed());
        assertTrue(queue.finish(next, 410, 1000, "gone", new AttemptVerdict.Failed(410, "gone", false)));
        assertEquals(
                List.of("DELIVERED", "FAILED"),
                jdbc.queryForList(
                        "SELECT status FROM webhook_delivery WHERE id IN (?, ?) ORDER BY id",
                        String.class,
                        first,
                        second));
        assertEquals(
                List.of(1, 2),
                jdbc.queryForList(
                        "SELECT attempt_no FROM webhook_attempt WHERE delivery_id = ? ORDER BY attempt_no",
                        Integer.class,
                        first));
    }

    @Test
    void the_listing_tells_when_the_next_delivery_becomes_due() {
        DeliveryQueue queue = context.getBean(DeliveryQueue.class);
        long later = delivery(sessionWithMessages(1));
        jdbc.update(
                "UPDATE webhook_delivery SET next_attempt_at = UTC_TIMESTAMP(6) + INTERVAL 1 HOUR WHERE id = ?", later);
        DeliveryQueue.Due due = queue.due(100, null);
        assertFalse(due.ids().contains(later), "not due yet");
        assertNotNull(due.nextDueMicros(), "a pending delivery becomes due");
        assertTrue(
                due.nextDueMicros() > 0
                        && due.nextDueMicros() <= Duration.ofHours(1).toNanos() / 1000,
                "within the hour: " + due.nextDueMicros());
        jdbc.update("UPDATE webhook_delivery SET status = 'DELIVERED' WHERE id = ?", later);
    }

    @Test
    void disabling_an_endpoint_twice_keeps_one_row_with_the_latest_reason_and_enabling_clears_it() {
        WebhookEndpoints endpoints = context.getBean(WebhookEndpoints.class);
        String url = "https://hooks.example/" + UUID.randomUUID();
        endpoints.disable(url, "first 410");
        endpoints.disable(url, "second 410");
        assertEquals(
                List.of("second 410"),
                jdbc.queryForList("SELECT disabled_reason FROM webhook_endpoint WHERE url = ?", String.class, url));
        assertTrue(endpoints.enable(url));
        assertFalse(endpoints.enable(url));
        assertEquals(
                Collections.singletonList(null),
                jdbc.queryForList("SELECT disabled_reason FROM webhook_endpoint WHERE url = ?", String.class, url));
    }

    private long delivery(long session) {
        String webhookId = "msg_" + UUID.randomUUID();
        jdbc.update("""
                INSERT INTO webhook_delivery (webhook_id, session_id, event_type, endpoint_url, payload, status,
                                              next_attempt_at, created_at)
                VALUES (?, ?, 'reply.created', 'https://hooks.example/in', '{}', 'PENDING', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))""", webhookId, session);
        return jdbc.queryForObject("SELECT id FROM webhook_delivery WHERE webhook_id = ?", Long.class, webhookId);
    }
}
