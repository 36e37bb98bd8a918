package dev.settle.agent.lease;

import dev.settle.agent.TestAgent;
import dev.settle.agent.stream.TurnStream;
import dev.settle.agent.stream.TurnStreams;
import dev.settle.agent.turn.Conversation;
import dev.settle.agent.turn.ReplyCommit;
import dev.settle.agent.turn.Turns;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The lease and the fenced commit, raced and paused for real on MariaDB. */
class SessionLeaseTest {
    static TestAgent agent;
    static SessionLease leases;
    static ReplyCommit replies;
    static Conversation conversation;
    static Turns turns;

    @BeforeAll
    static void start() {
        agent = new TestAgent("lease", Map.of("settle.lease.ttl", "1s"));
        leases = agent.bean(SessionLease.class);
        replies = agent.bean(ReplyCommit.class);
        conversation = agent.bean(Conversation.class);
        turns = agent.bean(Turns.class);
    }

    @AfterAll
    static void stop() {
        agent.close();
    }

    @Test
    void exactly_one_of_16_racing_threads_wins_the_claim_in_every_round() throws Exception {
        int threads = 16;
        for (int round = 0; round < 25; round++) {
            long session = agent.sessionWithMessages(1);
            CyclicBarrier barrier = new CyclicBarrier(threads);
            List<Future<SessionLease.Lease>> claims = new ArrayList<>();
            try (ExecutorService pool = Executors.newFixedThreadPool(threads)) {
                for (int i = 0; i < threads; i++) {
                    claims.add(pool.submit(() -> {
                        barrier.await();
                        return leases.claim(session);
                    }));
                }
            }
            int winners = 0;
            for (Future<SessionLease.Lease> f : claims) {
                winners += f.get() == null ? 0 : 1;
            }
            assertEquals(1, winners, "round " + round);
            assertEquals(1, agent.count("SELECT lease_epoch FROM chat_session WHERE id = ?", session));
        }
    }

    @Test
    void second_claim_fails_while_lease_is_live_and_nothing_to_answer_is_never_claimed() {
        long session = agent.sessionWithMessages(2);
        SessionLease.Lease first = leases.claim(session);
        assertNotNull(first);
        assertNull(leases.claim(session));
        leases.release(first);
        SessionLease.Lease second = leases.claim(session);
        assertEquals(first.epoch() + 1, second.epoch());
        leases.release(second);

        agent.jdbc.update("UPDATE chat_session SET replied_version = version WHERE id = ?", session);
        assertNull(leases.claim(session), "all answered: nothing to claim");
    }

    @Test
    void a_holder_paused_past_the_ttl_cannot_heartbeat_or_commit_even_if_nobody_took_over() throws Exception {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        Conversation.Snapshot turn = conversation.load(lease);
        long turnId = turns.begin(lease, turn.fromVersion(), turn.toVersion());
        Thread.sleep(1500); // paused past the 1 s TTL
        assertFalse(leases.heartbeat(lease));
        assertEquals(
                ReplyCommit.Outcome.LEASE_LOST,
                replies.commit(lease, turnId, turn, new TurnStream.Rest(List.of(), 0, "late reply"), Turns.Calls.NONE)
                        .outcome());
        assertEquals(
                0,
                agent.count("SELECT COUNT(*) FROM chat_message WHERE session_id = ? AND role = 'assistant'", session));
        assertEquals(0, agent.count("SELECT COUNT(*) FROM webhook_delivery WHERE session_id = ?", session));
        assertEquals(0, agent.count("SELECT replied_version FROM chat_session WHERE id = ?", session));
        assertEquals(
                "RUNNING", agent.jdbc.queryForObject("SELECT state FROM chat_turn WHERE id = ?", String.class, turnId));

        // the successor closes the abandoned turn and answers
        SessionLease.Lease successor = leases.claim(session);
        assertEquals(lease.epoch() + 1, successor.epoch());
        Conversation.Snapshot again = conversation.load(successor);
        long next = turns.begin(successor, again.fromVersion(), again.toVersion());
        assertEquals(
                "FAILED", agent.jdbc.queryForObject("SELECT state FROM chat_turn WHERE id = ?", String.class, turnId));
        assertEquals(
                ReplyCommit.Outcome.COMMITTED,
                replies.commit(successor, next, again, new TurnStream.Rest(List.of(), 0, "the reply"), Turns.Calls.NONE)
                        .outcome());
        // and the old holder, resuming now, is fenced by the new token too
        assertEquals(
                ReplyCommit.Outcome.LEASE_LOST,
                replies.commit(lease, turnId, turn, new TurnStream.Rest(List.of(), 0, "late reply"), Turns.Calls.NONE)
                        .outcome());
        assertEquals(
                1,
                agent.count("SELECT COUNT(*) FROM chat_message WHERE session_id = ? AND role = 'assistant'", session));
        assertEquals(1, agent.count("SELECT COUNT(*) FROM webhook_delivery WHERE session_id = ?", session));
        leases.release(successor);
    }

    /**
     * A turn whose holder lost its lease mid-stream ends its stream with {@code turn.abandoned}, written by the next
     * holder as it closes the turn, before anything of its own turn; a turn that never opened its stream gets no
     * event (no client saw it start).
     */
    @Test
    void a_turn_left_running_ends_its_stream_with_turn_abandoned_before_the_next_turn_starts() {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease lost = leases.claim(session);
        Conversation.Snapshot seen = conversation.load(lost);
        long opened = turns.begin(lost, seen.fromVersion(), seen.toVersion());
        try (TurnStream stream = agent.bean(TurnStreams.class)
                .open(lost, opened, Turns.started(opened, seen.fromVersion(), seen.toVersion()))) {
            stream.delta("partial ");
            stream.sync(); // written; the holder then dies without ending its turn
        }
        expire(session);

        SessionLease.Lease second = leases.claim(session);
        Conversation.Snapshot again = conversation.load(second);
        assertTrue(again.abandoned());
        long silent = turns.begin(second, again.fromVersion(), again.toVersion(), again.abandoned());
        expire(session); // dies before its stream opened

        SessionLease.Lease third = leases.claim(session);
        Conversation.Snapshot last = conversation.load(third);
        long answering = turns.begin(third, last.fromVersion(), last.toVersion(), last.abandoned());
        try (TurnStream stream = agent.bean(TurnStreams.class)
                .open(third, answering, Turns.started(answering, last.fromVersion(), last.toVersion()))) {
            stream.sync();
        }

        assertEquals(
                List.of(
                        "turn.started " + opened,
                        "reply.delta " + opened,
                        "turn.abandoned " + opened,
                        "turn.started " + answering),
                agent.jdbc.queryForList(
                        "SELECT CONCAT(type, ' ', turn_id) FROM session_event WHERE session_id = ? ORDER BY seq",
                        String.class,
                        session),
                "the abandoned stream ends before the next turn's starts; the silent turn has no events");
        assertEquals(
                "{\"turnId\":" + opened + ",\"reason\":\"abandoned: its holder lost the lease\"}",
                agent.jdbc.queryForObject(
                        "SELECT data FROM session_event WHERE turn_id = ? AND type = 'turn.abandoned'",
                        String.class,
                        opened));
        assertEquals(
                List.of("FAILED", "FAILED", "RUNNING"),
                agent.jdbc.queryForList(
                        "SELECT state FROM chat_turn WHERE id IN (?, ?, ?) ORDER BY id",
                        String.class,
                        opened,
                        silent,
                        answering));
        leases.release(third);
    }

    private static void expire(long session) {
        agent.jdbc.update(
                "UPDATE chat_session SET lease_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE id = ?",
                session);
    }

    @Test
    void one_renewal_round_keeps_live_leases_and_reports_stolen_and_expired_ones_lost() throws Exception {
        Heartbeats heartbeats = agent.bean(Heartbeats.class);
        List<SessionLease.Lease> held = new ArrayList<>();
        List<Heartbeats.Beat> beats = new ArrayList<>();
        for (int i = 0; i < 600; i++) { // more than one statement's worth
            SessionLease.Lease lease = leases.claim(agent.sessionWithMessages(1));
            held.add(lease);
            beats.add(heartbeats.start(lease));
        }
        SessionLease.Lease stolen = held.get(3);
        SessionLease.Lease expired = held.get(550);
        agent.jdbc.update(
                "UPDATE chat_session SET lease_token = 'someone-else', lease_epoch = lease_epoch + 1 WHERE id = ?",
                stolen.sessionId());
        agent.jdbc.update(
                "UPDATE chat_session SET lease_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE id = ?",
                expired.sessionId());
        // the scheduled rounds (every 333 ms) run meanwhile; after 700 ms an unrenewed lease would be near expiry
        long until = System.nanoTime() + 700_000_000L;
        while (System.nanoTime() < until) {
            Thread.onSpinWait();
        }
        heartbeats.renew();
        for (int i = 0; i < held.size(); i++) {
            boolean shouldLive = i != 3 && i != 550;
            assertEquals(shouldLive, beats.get(i).alive(), "lease " + i);
        }
        String ids = String.join(
                ",", held.stream().map(l -> Long.toString(l.sessionId())).toList());
        assertEquals(598, agent.count("""
                SELECT COUNT(*) FROM chat_session WHERE id IN (%s)
                   AND lease_expires_at > UTC_TIMESTAMP(6) + INTERVAL 500000 MICROSECOND
                   AND lease_token <> 'someone-else'""".formatted(ids)), "renewed to a full TTL");
        Thread.interrupted(); // the lost beats interrupted this (their worker) thread
        for (int i = 0; i < held.size(); i++) {
            beats.get(i).close();
            leases.release(held.get(i));
        }
    }

    @Test
    void a_row_locked_by_another_transaction_delays_the_renewal_of_no_other_lease() throws Exception {
        Heartbeats heartbeats = agent.bean(Heartbeats.class);
        List<SessionLease.Lease> held = new ArrayList<>();
        List<Heartbeats.Beat> beats = new ArrayList<>();
        try {
            // long leases, so that a renewal (to the 1 s TTL) is seen, and a loaded machine loses none meanwhile
            String ids = beatingLongLeases(50, heartbeats, held, beats);
            SessionLease.Lease busy = held.get(20);
            try (java.sql.Connection blocker = agent.jdbc.getDataSource().getConnection()) {
                blocker.setAutoCommit(false);
                try (var st = blocker.prepareStatement("SELECT id FROM chat_session WHERE id = ? FOR UPDATE")) {
                    st.setLong(1, busy.sessionId());
                    st.executeQuery().close();
                }
                try (ExecutorService pool = Executors.newSingleThreadExecutor()) {
                    // the held row waits at most the heartbeat pool's lock wait (1 s); a renewal queued on it, 50 s
                    pool.submit(heartbeats::renew).get(10, java.util.concurrent.TimeUnit.SECONDS);
                }
                assertEquals(49, agent.count("""
                        SELECT COUNT(*) FROM chat_session WHERE id IN (%s)
                           AND lease_expires_at < UTC_TIMESTAMP(6) + INTERVAL 30 SECOND""".formatted(ids)), "every other lease renewed (to the 1 s TTL)");
                assertTrue(beats.get(20).alive(), "a lease whose row was held is not lost for it");
                blocker.rollback();
            }
        } finally {
            Thread.interrupted(); // a beat lost on a loaded machine interrupts this (its worker) thread
            for (int i = 0; i < held.size(); i++) {
                beats.get(i).close();
                leases.release(held.get(i));
            }
        }
    }

    /**
     * Under load many transactions hold session rows at once (POSTs, turns flushing their streams). A round that
     * waited for each held row in turn would last one lock wait per row, and every lease of the worker would go
     * unrenewed meanwhile: past the TTL they are all lost at once and taken over, and the takeovers' turns lose
     * theirs the same way (the chaos run with 200 users answered nothing for minutes). A round waits once.
     */
    @Test
    void rows_held_by_other_transactions_delay_a_renewal_round_by_one_lock_wait_however_many() throws Exception {
        Heartbeats heartbeats = agent.bean(Heartbeats.class);
        List<SessionLease.Lease> held = new ArrayList<>();
        List<Heartbeats.Beat> beats = new ArrayList<>();
        int busy = 8;
        List<java.sql.Connection> blockers = new ArrayList<>();
        try {
            String ids = beatingLongLeases(20, heartbeats, held, beats);
            holdRows(held.subList(0, busy), blockers);
            long started = System.nanoTime();
            try (ExecutorService pool = Executors.newSingleThreadExecutor()) {
                pool.submit(heartbeats::renew).get(60, java.util.concurrent.TimeUnit.SECONDS);
            }
            long millis = (System.nanoTime() - started) / 1_000_000;
            // one lock wait is 1 s; waiting for each held row in turn takes at least 1 + 8 s
            assertTrue(
                    millis < (1 + busy) * 1000L / 2,
                    "the round took " + millis + " ms with " + busy + " rows held by others");
            assertEquals(
                    held.size() - busy, agent.count("""
                    SELECT COUNT(*) FROM chat_session WHERE id IN (%s)
                       AND lease_expires_at < UTC_TIMESTAMP(6) + INTERVAL 30 SECOND""".formatted(ids)), "every other lease renewed (to the 1 s TTL)");
            for (int i = 0; i < busy; i++) {
                assertTrue(beats.get(i).alive(), "a lease whose row was held is not lost for it (" + i + ")");
            }
        } finally {
            endAll(blockers, held, beats);
        }
    }

    /**
     * A renewal that waits for a row another transaction holds (a POST, a turn's commit) holds no other session's row
     * meanwhile: POSTs to the worker's other sessions would queue behind it for up to its lock wait (the chaos run with
     * 200 users named the renewal's multi-row statement, waiting on one row with others locked, in a third of its slow
     * POSTs). Two rows held; once one holder commits, that row is free again at once, while the other is still held.
     */
    @Test
    void a_renewal_waiting_for_a_held_row_holds_no_other_sessions_row() throws Exception {
        Heartbeats heartbeats = agent.bean(Heartbeats.class);
        List<SessionLease.Lease> held = new ArrayList<>();
        List<Heartbeats.Beat> beats = new ArrayList<>();
        List<java.sql.Connection> blockers = new ArrayList<>();
        try (ExecutorService pool = Executors.newSingleThreadExecutor()) {
            beatingLongLeases(2, heartbeats, held, beats);
            holdRows(held, blockers);
            Future<?> renewal = pool.submit(heartbeats::renew);
            // INNODB_TRX is a cache, refreshed only after 100 ms without reads: polled every 200 ms
            await("a renewal waits for a held row")
                    .atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(200))
                    .until(() -> agent.count(
                                    "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'")
                            > 0);
            blockers.getFirst().commit();
            long longest = longestLocked(held.getFirst().sessionId(), Duration.ofMillis(1500));
            assertTrue(
                    longest < 300,
                    "the first session's row, free of its holder, stayed locked " + longest
                            + " ms at a stretch while the renewal waited for the second's");
            renewal.get(10, java.util.concurrent.TimeUnit.SECONDS);
        } finally {
            endAll(blockers, held, beats);
        }
    }

    /** Each lease's session row locked by a transaction of its own, as POSTs would hold them; added to blockers. */
    private static void holdRows(List<SessionLease.Lease> rows, List<java.sql.Connection> blockers)
            throws java.sql.SQLException {
        for (SessionLease.Lease lease : rows) {
            java.sql.Connection blocker = agent.jdbc.getDataSource().getConnection();
            blockers.add(blocker);
            blocker.setAutoCommit(false);
            try (var st = blocker.prepareStatement("SELECT id FROM chat_session WHERE id = ? FOR UPDATE")) {
                st.setLong(1, lease.sessionId());
                st.executeQuery().close();
            }
        }
    }

    /** Rolls the blockers back and closes them, ends the beats and releases the leases. */
    private static void endAll(
            List<java.sql.Connection> blockers, List<SessionLease.Lease> held, List<Heartbeats.Beat> beats)
            throws java.sql.SQLException {
        for (java.sql.Connection blocker : blockers) {
            blocker.rollback();
            blocker.close();
        }
        Thread.interrupted(); // a beat lost on a loaded machine interrupts this (its worker) thread
        for (int i = 0; i < held.size(); i++) {
            beats.get(i).close();
            leases.release(held.get(i));
        }
    }

    /**
     * Tries to lock the session's row without waiting ({@code NOWAIT}), every 10 ms for {@code during}: the longest
     * time, in milliseconds, from a refusal to the next success.
     */
    private static long longestLocked(long session, Duration during)
            throws java.sql.SQLException, InterruptedException {
        long longest = 0;
        long refusedSince = -1;
        long end = System.nanoTime() + during.toNanos();
        try (java.sql.Connection probe = agent.jdbc.getDataSource().getConnection()) {
            probe.setAutoCommit(false);
            while (System.nanoTime() < end) {
                long now = System.nanoTime();
                try (var st = probe.prepareStatement("SELECT id FROM chat_session WHERE id = ? FOR UPDATE NOWAIT")) {
                    st.setLong(1, session);
                    st.executeQuery().close();
                    if (refusedSince >= 0) {
                        longest = Math.max(longest, (now - refusedSince) / 1_000_000);
                        refusedSince = -1;
                    }
                } catch (java.sql.SQLException locked) {
                    if (refusedSince < 0) {
                        refusedSince = now;
                    }
                }
                probe.rollback();
                Thread.sleep(10); // the probe's sampling interval
            }
            if (refusedSince >= 0) {
                longest = Math.max(longest, (System.nanoTime() - refusedSince) / 1_000_000);
            }
        }
        return longest;
    }

    @Test
    void a_newer_message_supersedes_the_reply_and_nothing_is_written() {
        long session = agent.sessionWithMessages(1);
        SessionLease.Lease lease = leases.claim(session);
        Conversation.Snapshot turn = conversation.load(lease);
        long turnId = turns.begin(lease, turn.fromVersion(), turn.toVersion());
        agent.newMessage(session);
        assertEquals(
                ReplyCommit.Outcome.SUPERSEDED,
                replies.commit(lease, turnId, turn, new TurnStream.Rest(List.of(), 0, "stale"), Turns.Calls.NONE)
                        .outcome());
        assertEquals(
                0,
                agent.count("SELECT COUNT(*) FROM chat_message WHERE session_id = ? AND role = 'assistant'", session));
        assertEquals(0, agent.count("SELECT COUNT(*) FROM webhook_delivery WHERE session_id = ?", session));
        assertTrue(turns.end(lease, turnId, Turns.Ending.DISCARDED, "superseded", Turns.Calls.NONE));
        leases.release(lease);
    }

    @Test
    void past_max_wait_a_finished_reply_commits_for_the_versions_it_saw() {
        long session = agent.sessionWithMessages(2);
        agent.jdbc.update(
                "UPDATE chat_session SET oldest_unanswered_at = UTC_TIMESTAMP(6) - INTERVAL 1 HOUR WHERE id = ?",
                session);
        SessionLease.Lease lease = leases.claim(session);
        Conversation.Snapshot turn = conversation.load(lease);
        long turnId = turns.begin(lease, turn.fromVersion(), turn.toVersion());
        agent.newMessage(session);
        assertEquals(
                ReplyCommit.Outcome.COMMITTED,
                replies.commit(lease, turnId, turn, new TurnStream.Rest(List.of(), 0, "for 1-2"), Turns.Calls.NONE)
                        .outcome());
        assertEquals(2, agent.count("SELECT replied_version FROM chat_session WHERE id = ?", session));
        assertEquals(1, agent.count("""
                SELECT COUNT(*) FROM chat_session s JOIN chat_message m ON m.session_id = s.id AND m.version = 3
                 WHERE s.id = ? AND s.oldest_unanswered_at = m.created_at""", session), "message 3 is now the oldest unanswered");
        leases.release(lease);
    }

    /**
     * Claims {@code n} leases of new sessions into {@code held}, makes each expire in 60 s (a loaded machine loses
     * none while a test holds rows) and starts a heartbeat for each into {@code beats}; returns their session ids,
     * comma-separated.
     */
    private String beatingLongLeases(
            int n, Heartbeats heartbeats, List<SessionLease.Lease> held, List<Heartbeats.Beat> beats) {
        for (int i = 0; i < n; i++) {
            held.add(leases.claim(agent.sessionWithMessages(1)));
        }
        String ids = String.join(
                ",", held.stream().map(l -> Long.toString(l.sessionId())).toList());
        agent.jdbc.update(
                "UPDATE chat_session SET lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL 60 SECOND WHERE id IN (" + ids
                        + ")");
        held.forEach(lease -> beats.add(heartbeats.start(lease)));
        return ids;
    }
}
