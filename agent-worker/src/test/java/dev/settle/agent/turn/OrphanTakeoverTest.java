package dev.settle.agent.turn;

import dev.settle.agent.TestAgent;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A dead worker may leave more orphaned leases than one page of a scan: a survivor's one look takes over as many as
 * it has free turn slots, not the next ones half a TTL later. Lease TTL 1 h: the scanner's scheduled looks are 30
 * minutes apart, so only the test's own look runs.
 */
class OrphanTakeoverTest {
    static TestAgent agent;

    @BeforeAll
    static void start() {
        agent = new TestAgent("orphans", Map.of("settle.lease.ttl", "1h"));
    }

    @AfterAll
    static void stop() {
        agent.close();
    }

    @Test
    void one_look_takes_over_every_orphan_a_dead_worker_left_up_to_the_free_slots() {
        int orphans = 150; // one and a half of the old fixed page (100)
        List<Long> sessions = new ArrayList<>();
        for (int i = 0; i < orphans; i++) {
            sessions.add(agent.sessionWithMessages(1));
        }
        String ids = String.join(",", sessions.stream().map(String::valueOf).toList());
        agent.jdbc.update("""
                UPDATE chat_session SET lease_token = 'dead-holder', lease_epoch = 1,
                                        lease_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND
                 WHERE id IN (%s)""".formatted(ids));

        agent.bean(OrphanedLeaseScanner.class).tick();

        await().atMost(Duration.ofSeconds(60))
                .until(() -> agent.count("SELECT COUNT(*) FROM chat_session WHERE id IN (%s) AND replied_version = 1"
                                .formatted(ids))
                        == orphans);
        assertEquals(
                orphans,
                agent.count("SELECT COUNT(*) FROM chat_session WHERE id IN (%s) AND lease_epoch = 2".formatted(ids)),
                "each taken over once");
    }

    @Test
    void a_look_starts_no_second_turn_for_a_session_whose_takeover_is_still_starting() throws Exception {
        long session = agent.sessionWithMessages(1);
        agent.jdbc.update("""
                UPDATE chat_session SET lease_token = 'dead-holder', lease_epoch = 1,
                                        lease_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND
                 WHERE id = ?""", session);
        MeterRegistry meters = agent.bean(MeterRegistry.class);
        double claims = claims(meters);
        OrphanedLeaseScanner scanner = agent.bean(OrphanedLeaseScanner.class);
        try (Connection holder = agent.jdbc.getDataSource().getConnection()) {
            // someone holds the session's row (an accept, say): the takeover's claim queues on it
            holder.setAutoCommit(false);
            try (Statement st = holder.createStatement()) {
                st.executeQuery("SELECT id FROM chat_session WHERE id = " + session + " FOR UPDATE")
                        .close();
            }
            scanner.tick();
            await("the takeover's claim queues on the held row")
                    .atMost(Duration.ofSeconds(30))
                    .until(() -> agent.lockWaitsOn("chat_session") == 1);
            scanner.tick(); // later looks still see the lease expired: its claim has not committed
            scanner.tick();
            holder.rollback();
        }
        await().atMost(Duration.ofSeconds(60))
                .until(() -> agent.count("SELECT replied_version FROM chat_session WHERE id = ?", session) == 1);
        assertEquals(claims + 1, claims(meters), 0.0, "one claim: the later looks started no second turn");
    }

    /**
     * A successor that could not close the turn its predecessor left RUNNING (its close's guarded write was refused:
     * the lease expired inside the close's transaction, and a renewal that had waited for that transaction's lock
     * then renewed it — seen in an overload run) begins no turn of its own: a turn begun beside the unclosed one would
     * leave that one's stream without an end. The close's refusal is forced here; the rest is the real thing.
     */
    @Test
    void a_successor_that_could_not_close_the_abandoned_turn_begins_none() {
        long session = agent.sessionWithMessages(1);
        dev.settle.agent.lease.SessionLease leases = agent.bean(dev.settle.agent.lease.SessionLease.class);
        Turns turns = agent.bean(Turns.class);
        dev.settle.agent.lease.SessionLease.Lease lost = leases.claim(session);
        long left = turns.begin(lost, 1, 1, false);
        agent.jdbc.update(
                "UPDATE chat_session SET lease_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE id = ?",
                session);
        dev.settle.agent.lease.SessionLease.Lease successor = leases.claim(session);
        Turns refusing =
                new Turns(
                        agent.jdbc,
                        agent.bean(org.springframework.transaction.PlatformTransactionManager.class),
                        leases) {
                    @Override
                    boolean closeAbandoned(dev.settle.agent.lease.SessionLease.Lease lease) {
                        return false;
                    }
                };

        assertEquals(null, refusing.begin(successor, 1, 1, true));
        assertEquals(
                List.of(left),
                agent.jdbc.queryForList(
                        "SELECT id FROM chat_turn WHERE session_id = ? AND state = 'RUNNING'", Long.class, session),
                "no second RUNNING turn beside the unclosed one");
        leases.release(successor);
    }

    private static double claims(MeterRegistry meters) {
        return meters.find("settle.lease.claims").counters().stream()
                .mapToDouble(c -> c.count())
                .sum();
    }
}
