package dev.settle.agent.turn;

import dev.settle.schema.DebounceTiming;
import dev.settle.schema.SessionRules;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.time.LocalDateTime;
import java.util.List;

/**
 * After a holder releases its lease, messages may still be waiting (a turn was superseded, or committed
 * past max-wait while the user kept typing), and their timer may have fired while the lease was busy. This
 * arms the session's timer again from the conversation's own times, by the timer rule of {@link SessionRules}
 * (window after the last message, never past the oldest unanswered message's max-wait deadline), unless a timer is
 * already armed. The timer remembers the last message's time, so that a typing signal from before it does not hold
 * the timer (the debounce worker's TypingHolds).
 *
 * <p>Two statements, not one {@code INSERT ... SELECT}: under REPEATABLE READ that select takes a shared lock
 * on the session row and holds it while the insert queues on the session's timer row, which the debounce
 * worker's TimerFirer keeps locked while it waits for the broker's acks (seconds, when the broker is away);
 * ingest's upsert of the session would wait behind it, and a POST would answer 202 only when Kafka did
 * ({@code RearmLockTest}). The read here is a plain consistent read; a session
 * answered between the two statements gets a spare timer, whose SessionReady finds nothing to do.
 */
@Component
public class WorkWaker {
    /** Parameters: window and max-wait in microseconds, the session. */
    static final String PENDING = "SELECT "
            + SessionRules.timerFireAt("s.last_message_at", "s.oldest_unanswered_at", "?", "?") + " AS fire_at, "
            + SessionRules.timerDeadline("s.oldest_unanswered_at", "?")
            + " AS deadline_at, s.version, s.last_message_at"
            + " FROM chat_session s WHERE s.id = ? AND s.oldest_unanswered_at IS NOT NULL AND " + SessionRules.HAS_WORK;

    static final String REARM = """
            INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at,
                                        last_message_at)
            VALUES (?, ?, ?, ?, 'agent', UTC_TIMESTAMP(6), ?)
            ON DUPLICATE KEY UPDATE session_id = debounce_timer.session_id""";

    private record Pending(LocalDateTime fireAt, LocalDateTime deadlineAt, long version, LocalDateTime lastMessageAt) {}

    private final JdbcTemplate jdbc;
    private final long windowMicros;
    private final long maxWaitMicros;

    public WorkWaker(JdbcTemplate jdbc, DebounceTiming timing) {
        this.jdbc = jdbc;
        this.windowMicros = timing.windowMicros();
        this.maxWaitMicros = timing.maxwaitMicros();
    }

    public void rearmIfPending(long sessionId) {
        List<Pending> pending = jdbc.query(
                PENDING,
                (rs, i) -> new Pending(
                        rs.getObject("fire_at", LocalDateTime.class),
                        rs.getObject("deadline_at", LocalDateTime.class),
                        rs.getLong("version"),
                        rs.getObject("last_message_at", LocalDateTime.class)),
                windowMicros,
                maxWaitMicros,
                maxWaitMicros,
                sessionId);
        for (Pending p : pending) {
            jdbc.update(
                    REARM,
                    sessionId,
                    dev.settle.schema.DbTime.text(p.fireAt()),
                    dev.settle.schema.DbTime.text(p.deadlineAt()),
                    p.version(),
                    dev.settle.schema.DbTime.text(p.lastMessageAt()));
        }
    }
}
