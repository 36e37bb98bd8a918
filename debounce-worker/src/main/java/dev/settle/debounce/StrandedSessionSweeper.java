package dev.settle.debounce;

import dev.settle.boot.PeriodicTask;
import dev.settle.schema.DebounceTiming;
import dev.settle.schema.SessionRules;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;

import java.time.Instant;
import java.util.List;

/**
 * Wakes sessions that nothing else will wake: their MessageAccepted events were lost, or the agent that held
 * their lease died mid-turn. Kafka events are hints; this sweep over the database is what guarantees that
 * every accepted message is answered without client action.
 *
 * <p>Every {@code settle.sweeper.interval} (a fixed-rate {@link PeriodicTask}; a failed sweep is logged and
 * retried after a backoff of at most the interval):
 * <ol>
 *   <li>Read ({@link #STRANDED}, a plain consistent read that locks nothing) sessions with unanswered
 *       messages that have not failed at this version ({@code oldest_unanswered_at IS NOT NULL} and
 *       {@link SessionRules#HAS_WORK}), hold no live lease ({@link SessionRules#LEASE_FREE}), have no
 *       timer row (anti-join), and whose last message is older than {@code grace}.</li>
 *   <li>Insert ({@link #ARM_STRANDED}) a timer for each that is due now
 *       ({@code fire_at = deadline_at = UTC_TIMESTAMP(6)}, {@code armed_by = 'sweeper'}), so {@link TimerFirer} publishes it on its next round with cause
 *       {@code sweeper}.</li>
 *   <li>A timer armed concurrently by a message wins: {@code ON DUPLICATE KEY UPDATE session_id = debounce_timer.session_id}
 *       leaves it untouched (no {@code INSERT IGNORE}, which would swallow other errors too).</li>
 * </ol>
 * The read never locks: an {@code INSERT ... SELECT} over {@code chat_session} would, under REPEATABLE READ,
 * hold shared locks on the session rows it scanned while it queued on a timer row that {@link TimerFirer}
 * keeps locked during its wait for the broker's acks, and ingest's upserts, so POSTs, would wait for Kafka
 * (RowLockChainTest). A session answered between the read and the insert gets a spare timer, whose
 * SessionReady finds nothing to do.
 * A session that stays stranded (no agent alive) is woken again each interval until it is answered, fails,
 * or gets a live lease.
 */
@Component
public class StrandedSessionSweeper extends PeriodicTask {
    private static final Logger log = LoggerFactory.getLogger(StrandedSessionSweeper.class);

    /** Sessions to wake, read without locking them (a plain consistent read). */
    static final String STRANDED = """
            SELECT s.id, s.version
              FROM chat_session s LEFT JOIN debounce_timer t ON t.session_id = s.id
             WHERE s.oldest_unanswered_at IS NOT NULL
               AND s.last_message_at < UTC_TIMESTAMP(6) - INTERVAL :graceMicros MICROSECOND
               AND t.session_id IS NULL
               AND\s""" + SessionRules.HAS_WORK + " AND " + SessionRules.LEASE_FREE;

    /** A timer due now for one stranded session; a timer armed meanwhile by a message wins. */
    static final String ARM_STRANDED = """
            INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at)
            VALUES (:sessionId, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), :version, 'sweeper', UTC_TIMESTAMP(6))
            ON DUPLICATE KEY UPDATE session_id = debounce_timer.session_id
            """;

    private final JdbcClient jdbc;
    private final SweeperSettings settings;
    private final TimerWake wake;

    public StrandedSessionSweeper(JdbcClient jdbc, SweeperSettings settings, TimerWake wake) {
        super("stranded-session-sweeper", settings.interval());
        this.jdbc = jdbc;
        this.settings = settings;
        this.wake = wake;
    }

    private record Stranded(long sessionId, long version) {}

    /** One sweep; returns how many stranded sessions it armed a timer for. */
    public int sweep() {
        List<Stranded> stranded = jdbc.sql(STRANDED)
                .param("graceMicros", DebounceTiming.micros(settings.grace()))
                .query((rs, n) -> new Stranded(rs.getLong("id"), rs.getLong("version")))
                .list();
        int armed = 0;
        for (Stranded s : stranded) {
            armed += Math.min(
                    1,
                    jdbc.sql(ARM_STRANDED)
                            .param("sessionId", s.sessionId())
                            .param("version", s.version())
                            .update());
        }
        if (armed > 0) {
            wake.armed(Instant.now());
            log.info("armed {} stranded session(s)", armed);
        }
        return armed;
    }

    @Override
    protected void tick() {
        sweep();
    }
}
