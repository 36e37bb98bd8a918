package dev.settle.agent;

import dev.settle.agent.lease.SessionLease;
import dev.settle.agent.stream.TurnStream;
import dev.settle.agent.turn.Conversation;
import dev.settle.agent.turn.ReplyCommit;
import dev.settle.agent.turn.TurnFailure;
import dev.settle.agent.turn.Turns;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every write of a holder checks the live lease, and a transaction whose lease expires between two of its
 * statements rolls back whole. The expiry is made to fall between two statements deterministically: the test
 * holds a row lock that one statement of the transaction waits on, and lets it go only once the database clock
 * has passed the lease's expiry.
 */
class FencedWritesTest {
    static TestAgent agent;
    static SessionLease leases;
    static Conversation conversation;
    static Turns turns;
    static DataSource db;

    @BeforeAll
    static void start() {
        agent = new TestAgent("fencedwrites", Map.of());
        leases = agent.bean(SessionLease.class);
        conversation = agent.bean(Conversation.class);
        turns = agent.bean(Turns.class);
        db = agent.bean(DataSource.class);
    }

    @AfterAll
    static void stop() {
        agent.close();
    }

    /** The lease expires this long after now, on the database clock (no heartbeat runs in these tests). */
    static void expireIn(long session, Duration d) {
        agent.jdbc.update(
                "UPDATE chat_session SET lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND WHERE id = ?",
                d.toNanos() / 1000,
                session);
    }

    static boolean expired(long session) {
        return agent.count(
                        "SELECT COUNT(*) FROM chat_session WHERE id = ? AND lease_expires_at < UTC_TIMESTAMP(6)",
                        session)
                == 1;
    }

    /** A connection in an open transaction that holds the row lock {@code lockSql} takes for {@code id}. */
    static Connection holding(String lockSql, long id) throws java.sql.SQLException {
        Connection blocker = db.getConnection();
        blocker.setAutoCommit(false);
        try (PreparedStatement lock = blocker.prepareStatement(lockSql)) {
            lock.setLong(1, id);
            lock.executeQuery().close();
        }
        return blocker;
    }

    /** A transaction of the agent is waiting for a lock in a statement that starts with {@code statement}. */
    static boolean waiting(String statement) {
        return waitingIn(statement) > 0;
    }

    /** Transactions waiting for a lock in a statement that starts with {@code statement}. */
    static int waitingIn(String statement) {
        return agent.count("""
                SELECT COUNT(*) FROM information_schema.INNODB_TRX
                 WHERE trx_state = 'LOCK WAIT' AND trx_query LIKE CONCAT(?, '%')""", statement);
    }

    static String turnState(long turnId) {
        return agent.jdbc.queryForObject("SELECT state FROM chat_turn WHERE id = ?", String.class, turnId);
    }

    static int events(long session, String type) {
        return agent.count("SELECT COUNT(*) FROM session_event WHERE session_id = ? AND type = ?", session, type);
    }

    /**
     * The reply's first statement checks the lease and locks the session row until commit: a lease that expires
     * after it cannot be taken over before the reply commits, so the reply commits whole, and a successor's claim
     * waits for it and then finds nothing to answer.
     */
    @Test
    void a_reply_whose_lease_expires_after_it_advanced_commits_whole_and_a_successor_waits_for_it() throws Exception {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        agent.jdbc.update(
                "INSERT INTO session_burst (session_id, end_version, fired_at) VALUES (?, 1, UTC_TIMESTAMP(6))",
                session);
        Conversation.Snapshot turn = conversation.load(lease);
        assertTrue(turn.bursts());
        long turnId = turns.begin(lease, turn.fromVersion(), turn.toVersion());
        try (Connection blocker =
                        holding("SELECT end_version FROM session_burst WHERE session_id = ? FOR UPDATE", session);
                ExecutorService pool = Executors.newFixedThreadPool(2)) {
            expireIn(session, Duration.ofSeconds(3));
            Future<ReplyCommit.Outcome> commit = pool.submit(() -> agent.bean(ReplyCommit.class)
                    .commit(lease, turnId, turn, new TurnStream.Rest(List.of(), 0, "late"), Turns.Calls.NONE)
                    .outcome());
            // the commit advanced replied_version under a live lease and now waits on the burst row
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> waiting("DELETE FROM session_burst") && expired(session));
            Future<SessionLease.Lease> successor = pool.submit(() -> leases.claim(session));
            await().atMost(Duration.ofSeconds(30)).until(() -> waiting("UPDATE chat_session"));
            blocker.rollback();
            assertEquals(ReplyCommit.Outcome.COMMITTED, commit.get(30, TimeUnit.SECONDS));
            assertNull(successor.get(30, TimeUnit.SECONDS), "answered: nothing left to claim");
        }
        assertEquals(
                1,
                agent.count("SELECT COUNT(*) FROM chat_message WHERE session_id = ? AND role = 'assistant'", session));
        assertEquals(1, agent.count("SELECT replied_version FROM chat_session WHERE id = ?", session));
        assertEquals(1, agent.count("SELECT COUNT(*) FROM webhook_delivery WHERE session_id = ?", session));
        assertEquals(1, events(session, "reply.created"));
        assertEquals(0, agent.count("SELECT COUNT(*) FROM session_burst WHERE session_id = ?", session));
        assertEquals("COMMITTED", turnState(turnId));
    }

    /**
     * The reply's first statement also ends its turn (one multi-table UPDATE of the session row and the turn's row),
     * and it locks the session row first, the order of every transaction under a lease: held up on the turn's row,
     * it already holds the session, so a successor whose claim comes after the lease expired waits for the reply,
     * which commits whole; the successor then finds nothing to answer. Were the turn's row locked first, the
     * successor's claim would not wait, it would take the session over and the reply would be refused.
     */
    @Test
    void a_reply_held_up_on_its_turn_row_already_holds_the_session_and_commits_before_a_successor() throws Exception {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        Conversation.Snapshot turn = conversation.load(lease);
        long turnId = turns.begin(lease, turn.fromVersion(), turn.toVersion());
        try (Connection blocker = holding("SELECT id FROM chat_turn WHERE id = ? FOR UPDATE", turnId);
                ExecutorService pool = Executors.newFixedThreadPool(2)) {
            expireIn(session, Duration.ofSeconds(3));
            Future<ReplyCommit.Outcome> commit = pool.submit(() -> agent.bean(ReplyCommit.class)
                    .commit(lease, turnId, turn, new TurnStream.Rest(List.of(), 0, "held"), Turns.Calls.NONE)
                    .outcome());
            // the reply's advance waits (no claim was sent yet), whichever table its text names first
            await().atMost(Duration.ofSeconds(30)).until(() -> waiting("UPDATE chat_") && expired(session));
            Future<SessionLease.Lease> successor = pool.submit(() -> leases.claim(session));
            // the successor queues behind the reply on the session row, or (were the turn locked first) claims at once
            await().atMost(Duration.ofSeconds(30)).until(() -> waitingIn("UPDATE chat_") == 2 || successor.isDone());
            blocker.rollback();
            assertEquals(ReplyCommit.Outcome.COMMITTED, commit.get(30, TimeUnit.SECONDS));
            assertNull(successor.get(30, TimeUnit.SECONDS), "answered: nothing left to claim");
        }
        assertEquals("COMMITTED", turnState(turnId));
        assertEquals(1, agent.count("SELECT replied_version FROM chat_session WHERE id = ?", session));
        assertEquals(
                1,
                agent.count("SELECT COUNT(*) FROM chat_message WHERE session_id = ? AND role = 'assistant'", session));
    }

    @Test
    void a_failure_whose_lease_expires_before_its_event_is_appended_rolls_back_whole() throws Exception {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        Conversation.Snapshot turn = conversation.load(lease);
        long turnId = turns.begin(lease, turn.fromVersion(), turn.toVersion());
        try (Connection blocker = db.getConnection();
                ExecutorService pool = Executors.newSingleThreadExecutor()) {
            blocker.setAutoCommit(false);
            // an uncommitted row with the failure's webhook-id: the outbox insert waits on its key
            try (PreparedStatement hold = blocker.prepareStatement("""
                    INSERT INTO webhook_delivery (webhook_id, session_id, event_type, payload, status, next_attempt_at, created_at)
                    VALUES (?, ?, 'reply.failed', '{}', 'PENDING', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))""")) {
                hold.setString(1, "wh_turn_" + turnId);
                hold.setLong(2, session);
                hold.executeUpdate();
            }
            expireIn(session, Duration.ofSeconds(3));
            Future<Boolean> failed = pool.submit(
                    () -> agent.bean(TurnFailure.class).record(lease, turnId, turn, "model down", Turns.Calls.NONE));
            await().atMost(Duration.ofSeconds(30))
                    .until(() -> waiting("INSERT INTO webhook_delivery") && expired(session));
            blocker.rollback();
            assertFalse(failed.get(30, TimeUnit.SECONDS));
        }
        assertEquals(0, agent.count("SELECT failed_version FROM chat_session WHERE id = ?", session));
        assertEquals("RUNNING", turnState(turnId));
        assertEquals(0, agent.count("SELECT COUNT(*) FROM webhook_delivery WHERE session_id = ?", session));
        assertEquals(0, events(session, "turn.failed"));
    }

    static List<Integer> counters(long turnId) {
        return agent.jdbc.queryForObject(
                "SELECT model_calls, prompt_tokens, completion_tokens FROM chat_turn WHERE id = ?",
                (rs, i) -> List.of(rs.getInt(1), rs.getInt(2), rs.getInt(3)),
                turnId);
    }

    @Test
    void a_fenced_out_holder_counts_no_model_call_on_its_abandoned_turn() {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        long turnId = turns.begin(lease, 1, 1);
        Turns.Calls one = Turns.Calls.NONE.plus(10, 0, 20);

        // expired, nobody took over yet: the holder is already dead
        expireIn(session, Duration.ofSeconds(-1));
        assertFalse(turns.end(lease, turnId, Turns.Ending.DISCARDED, "late", one));
        assertEquals(List.of(0, 0, 0), counters(turnId));

        // taken over: the old token still matches the turn row, not the session's lease
        SessionLease.Lease successor = leases.claim(session);
        assertNotNull(successor);
        assertFalse(turns.end(lease, turnId, Turns.Ending.DISCARDED, "late", one));
        assertEquals(List.of(0, 0, 0), counters(turnId));
        leases.release(successor);
    }
}
