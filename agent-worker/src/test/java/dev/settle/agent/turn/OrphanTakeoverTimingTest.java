package dev.settle.agent.turn;

import dev.settle.agent.TestAgent;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A dead holder's session is taken over when its lease expires, not at the scanner's next half-TTL look: three
 * leases left by a holder that stopped renewing expire 0.6 s apart (TTL 4 s, looks 2 s apart); each successor turn
 * starts within {@value #BOUND_MS} ms of the expiry.
 *
 * <p>The bound: with looks only, lease {@code i} would be taken over {@code (x - 0.6 i) mod 2} s late for some
 * {@code x} in [0, 2), and no {@code x} keeps all three within 1.2 s, so any bound under 1.2 s fails a scanner that
 * only looks periodically. 1 s leaves the turn's own start (claim, history read, begin; 10–60 ms when it passed)
 * room for a cold JVM or a loaded machine.
 */
class OrphanTakeoverTimingTest {
    static final long BOUND_MS = 1_000;

    @Test
    void each_orphaned_session_is_taken_over_within_moments_of_its_lease_expiring() {
        try (TestAgent agent =
                new TestAgent("orphan-timing", Map.of("settle.lease.ttl", "4s", "settle.agent.orphan-scan", "true"))) {
            List<Long> sessions = new ArrayList<>();
            List<Long> expiries = new ArrayList<>();
            for (int i = 0; i < 3; i++) {
                long session = agent.sessionWithMessages(1);
                // a holder that renewed last (TTL - remaining) ago and then died: more than 0.6 TTL left for now
                agent.jdbc.update("""
                        UPDATE chat_session SET lease_token = ?, lease_epoch = 1,
                                                lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
                         WHERE id = ?""", "dead-holder-" + i, (2_600 + 600 * i) * 1000L, session);
                sessions.add(session);
                expiries.add(micros("SELECT lease_expires_at FROM chat_session WHERE id = ?", agent, session));
            }
            for (long session : sessions) {
                await("session " + session + " taken over")
                        .atMost(Duration.ofSeconds(20))
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> agent.count("SELECT COUNT(*) FROM chat_turn WHERE session_id = ?", session) > 0);
            }
            for (int i = 0; i < sessions.size(); i++) {
                long started =
                        micros("SELECT MIN(started_at) FROM chat_turn WHERE session_id = ?", agent, sessions.get(i));
                long lateMs = (started - expiries.get(i)) / 1000;
                assertTrue(
                        lateMs >= 0 && lateMs <= BOUND_MS,
                        "lease " + i + ": taken over " + lateMs + " ms after it expired");
            }
        }
    }

    /** A DATETIME(6) read as microseconds on the database's clock. */
    private static long micros(String select, TestAgent agent, long session) {
        return agent.jdbc.queryForObject(
                "SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', (" + select + "))", Long.class, session);
    }
}
