package dev.settle.agent;

import dev.settle.agent.lease.SessionLease;
import dev.settle.agent.turn.Turns;
import dev.settle.testsupport.LocalMariaDb;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Lock order: a turn's transaction that takes a shared lock on its session row (an UPDATE joining chat_session)
 * and then wants it exclusively (the event append bumps event_seq) deadlocks with a renewal queued on the row in
 * between, and InnoDB kills one of them; ingest's upsert, queued the same way, can be killed again and again and
 * answer 503. {@link SessionLease#lockHeld} takes the exclusive lock first.
 *
 * <p>Staged exactly: a third transaction holds the row, the turn's transaction queues, the renewal queues
 * behind it, the row is released; both must succeed, in every round, for the two transactions that joined
 * (opening a turn while a dead holder's turn is still RUNNING, and discarding a turn). On MariaDB 10.11 (the
 * local server, when it answers) the old order deadlocks in every round; the embedded 11.4 grants the
 * upgrade, so there the test guards against regressions in the other direction only.
 */
class LockOrderTest {

    @ParameterizedTest
    @ValueSource(strings = {"embedded", "local-10.11"})
    void turn_transactions_never_deadlock_with_a_renewal_queued_on_their_session_row(String server) throws Exception {
        try (TestAgent agent = new TestAgent("lockorder", database(server))) {
            SessionLease leases = agent.bean(SessionLease.class);
            Turns turns = agent.bean(Turns.class);
            for (int round = 0; round < 4; round++) {
                long session = agent.sessionWithMessages(1);
                agent.jdbc.update("""
                        INSERT INTO chat_turn (session_id, lease_token, lease_epoch, from_version, to_version, state, started_at)
                        VALUES (?, 'dead-holder', 0, 1, 1, 'RUNNING', UTC_TIMESTAMP(6))""", session);
                SessionLease.Lease lease = leases.claim(session);
                stretch(agent, session);

                Long turnId = raceWithRenewal(agent, leases, lease, () -> turns.begin(lease, 1, 1));
                assertNotNull(turnId, "round " + round + ": the turn opened");
                assertEquals(
                        1,
                        agent.count(
                                "SELECT COUNT(*) FROM chat_turn WHERE session_id = ? AND state = 'FAILED'", session),
                        "the dead holder's turn was closed");

                stretch(agent, session);
                Boolean discarded = raceWithRenewal(
                        agent,
                        leases,
                        lease,
                        () -> turns.discard(lease, turnId, "superseded", Turns.Spent.NONE, Turns.Calls.NONE));
                assertTrue(discarded, "round " + round + ": the turn was discarded");
                assertEquals(
                        List.of("FAILED", "DISCARDED"),
                        agent.jdbc.queryForList(
                                "SELECT state FROM chat_turn WHERE session_id = ? ORDER BY id", String.class, session));
                leases.release(lease);
            }
        }
    }

    /** A long lease: the staging must not race the TTL on a loaded machine. */
    private static void stretch(TestAgent agent, long session) {
        agent.jdbc.update(
                "UPDATE chat_session SET lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL 60 SECOND WHERE id = ?",
                session);
    }

    /** Runs {@code action} queued behind a third transaction on the lease's row, with a renewal queued behind it. */
    private static <T> T raceWithRenewal(
            TestAgent agent, SessionLease leases, SessionLease.Lease lease, Callable<T> action) throws Exception {
        try (Connection blocker = agent.jdbc.getDataSource().getConnection();
                ExecutorService pool = Executors.newFixedThreadPool(2)) {
            blocker.setAutoCommit(false);
            try (var st = blocker.prepareStatement("SELECT id FROM chat_session WHERE id = ? FOR UPDATE")) {
                st.setLong(1, lease.sessionId());
                st.executeQuery().close();
            }
            Future<T> first = pool.submit(action);
            awaitLockWaits(agent, 1);
            Future<Set<String>> renewal = pool.submit(() -> leases.renewAll(agent.jdbc, List.of(lease)));
            awaitLockWaits(agent, 2);
            blocker.commit();
            T result = first.get();
            assertEquals(Set.of(lease.token()), renewal.get(), "the lease was renewed");
            return result;
        }
    }

    private static void awaitLockWaits(TestAgent agent, int n) {
        // INNODB_TRX is a cache, refreshed only after 100 ms without reads: polled every 200 ms
        await(n + " transactions waiting for a lock")
                .atMost(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(200))
                .pollInSameThread()
                .untilAsserted(() -> assertTrue(
                        agent.count("SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'")
                                >= n,
                        () -> "fewer than " + n + " transactions waiting for a lock: "
                                + agent.jdbc.queryForList("SELECT * FROM information_schema.INNODB_TRX")));
    }

    private static Map<String, Object> database(String server) {
        if (server.equals("embedded")) {
            return Map.of();
        }
        return Map.of(
                "spring.datasource.url",
                LocalMariaDb.newDatabaseOrSkip("LockOrderTest on MariaDB 10.11", "settle_lockorder_"),
                "spring.datasource.username",
                LocalMariaDb.USER,
                "spring.datasource.password",
                LocalMariaDb.PASSWORD);
    }
}
