package dev.settle.debounce;

import dev.settle.contracts.MessageAccepted;
import dev.settle.schema.DbTime;
import dev.settle.schema.DebounceTiming;
import dev.settle.schema.SessionRules;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;

import java.time.Instant;
import java.util.List;

/**
 * The debounce timer table: one row per session that is waiting to be answered ({@code debounce_timer},
 * isolated from {@code chat_session}, so finishing a turn never touches a timer).
 *
 * <p>Arming, in two statements:
 * <ol>
 *   <li>Read whether the event's version is still unanswered ({@link #UNANSWERED},
 *       {@code replied_version < version}); a redelivered event for an answered version arms nothing. The same
 *       read returns what {@link SessionPacing} needs for this message's window.</li>
 *   <li>No row yet: insert {@code deadline_at = oldestUnansweredAt + maxwait} and
 *       {@code fire_at = LEAST(acceptedAt + window, deadline_at)}, the timer rule of {@link SessionRules}.</li>
 *   <li>Row exists (a burst in progress): {@code deadline_at} keeps the earlier of the two deadlines, then
 *       {@code window_fire_at = LEAST(GREATEST(window_fire_at, acceptedAt + window), deadline_at)} (what the
 *       messages alone give), the message ends a typing hold from before it ({@link TypingHolds}), and
 *       {@code fire_at = LEAST(GREATEST(window_fire_at, held_until), deadline_at)} and
 *       {@code armed_version = GREATEST(...)}. GREATEST/LEAST make the update idempotent and commutative, so
 *       redelivered and reordered events leave the same row. {@code armed_by}/{@code armed_at} keep who
 *       created the row: a sweeper row (deadline = due now) stays due now and keeps cause {@code sweeper}.</li>
 * </ol>
 * All times come from the database clock: {@code acceptedAt} and {@code oldestUnansweredAt} were read from
 * it by ingest-api; the window and max-wait are added in SQL to the bound UTC DATETIME(6) values. Once the arm
 * committed, {@link TimerWake} is told the earliest it can make the timer due.
 *
 * <p>The read never locks the session row. An {@code INSERT ... SELECT FROM chat_session} would, under
 * REPEATABLE READ, hold a shared lock on it while the insert queues on the session's timer row, which
 * {@link TimerFirer} keeps locked while it waits for the broker's acks (seconds, when the broker is away):
 * ingest's upsert of the session, and so a POST's 202, would wait for Kafka (RowLockChainTest). A version
 * answered between the two statements gets a spare timer, whose SessionReady finds nothing to do.
 *
 * <p>Keeping the earlier deadline (rather than always the stored one) is deliberate: with reordering the
 * stored row may come from the later event, and the bounded-wait promise is about the oldest message.
 */
@Component
public class DebounceTimers {
    private static final Logger log = LoggerFactory.getLogger(DebounceTimers.class);

    /**
     * The session, if the event's version is still unanswered, with what {@link SessionPacing} needs (its tenant,
     * its recorded pacing, when its previous message was accepted, its tenant's ring): a plain consistent read, no
     * lock on any row. The previous message is the user message of version {@code version - 1} (one lookup in the
     * unique index on session and version).
     */
    static final String UNANSWERED = """
            SELECT s.tenant_id, p.samples, p.last_message_at, p.burst_messages, p.window_micros, p.window_cause,
                   pm.created_at AS previous_message_at, tp.samples AS tenant_samples
              FROM chat_session s
              LEFT JOIN session_pacing p ON p.session_id = s.id
              LEFT JOIN chat_message pm ON pm.session_id = s.id AND pm.version = :version - 1
              LEFT JOIN tenant_pacing tp ON tp.tenant_id = s.tenant_id
             WHERE s.id = :sessionId AND s.replied_version < :version""";

    private static final String ACCEPTED_AT = "CAST(:acceptedAt AS DATETIME(6))";
    private static final String OLDEST_AT = "CAST(:oldestAt AS DATETIME(6))";
    private static final String DEADLINE = SessionRules.timerDeadline(OLDEST_AT, ":maxwaitMicros");

    /**
     * A new row fires by the timer rule ({@link SessionRules#timerFireAt}); an existing one is extended: a later
     * message pushes its window out (by its own window, from {@link SessionPacing}), never past the earlier
     * deadline, and ends a typing hold from before it ({@link TypingHolds}); {@code window_cause} names the kind of
     * window that set {@code window_fire_at}. MySQL/MariaDB evaluate ON DUPLICATE KEY UPDATE assignments left to
     * right: each assignment sees the new values of those above it (window_cause compares with the old
     * window_fire_at, fire_at sees the new window_fire_at and hold).
     */
    static final String ARM = """
            INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at,
                                        last_message_at, window_cause, records_burst)
            VALUES (:sessionId, %s, %s, :version, 'message', UTC_TIMESTAMP(6),
                    %s, :windowCause, :recordsBurst)
            ON DUPLICATE KEY UPDATE
              deadline_at     = LEAST(debounce_timer.deadline_at, %s),
              window_cause    = CASE WHEN %s + INTERVAL :windowMicros MICROSECOND
                                          > COALESCE(debounce_timer.window_fire_at, debounce_timer.fire_at)
                                     THEN :windowCause ELSE debounce_timer.window_cause END,
              window_fire_at  = LEAST(GREATEST(COALESCE(debounce_timer.window_fire_at, debounce_timer.fire_at),
                                               %s + INTERVAL :windowMicros MICROSECOND),
                                      debounce_timer.deadline_at),
            %s
              fire_at         = LEAST(GREATEST(debounce_timer.window_fire_at,
                                               COALESCE(debounce_timer.held_until, debounce_timer.window_fire_at)),
                                      debounce_timer.deadline_at),
              armed_version   = GREATEST(debounce_timer.armed_version, :version),
              records_burst   = :recordsBurst
            """.formatted(
                    SessionRules.timerFireAt(ACCEPTED_AT, OLDEST_AT, ":windowMicros", ":maxwaitMicros"),
                    DEADLINE,
                    ACCEPTED_AT,
                    DEADLINE,
                    ACCEPTED_AT,
                    ACCEPTED_AT,
                    TypingHolds.afterMessage(ACCEPTED_AT));

    private final JdbcClient jdbc;
    private final DebounceTiming settings;
    private final SessionPacing pacing;
    private final TimerWake wake;

    public DebounceTimers(JdbcClient jdbc, DebounceTiming settings, SessionPacing pacing, TimerWake wake) {
        this.jdbc = jdbc;
        this.settings = settings;
        this.pacing = pacing;
        this.wake = wake;
    }

    /**
     * Arms or extends the session's timer for this accepted message, with the window {@link SessionPacing} gives
     * it, then records what the message taught.
     *
     * @return false when nothing was armed: the version is already answered or the session does not exist
     */
    public boolean arm(MessageAccepted event) {
        Instant oldest = event.oldestUnansweredAt() != null ? event.oldestUnansweredAt() : event.acceptedAt();
        List<SessionPacing.Observed> unanswered = jdbc.sql(UNANSWERED)
                .param("sessionId", event.sessionId())
                .param("version", event.version())
                .query((rs, n) -> SessionPacing.observed(rs))
                .list();
        if (unanswered.isEmpty()) {
            log.debug(
                    "session {} version {} already answered or unknown: nothing armed",
                    event.sessionId(),
                    event.version());
            return false;
        }
        SessionPacing.Observed seen = unanswered.getFirst();
        PacingRule.Step step = pacing.next(event, seen);
        int rows = jdbc.sql(ARM)
                .param("sessionId", event.sessionId())
                .param("version", event.version())
                .param("acceptedAt", DbTime.utc(event.acceptedAt()))
                .param("oldestAt", DbTime.utc(oldest))
                .param("windowMicros", step.window().micros())
                .param("windowCause", step.window().cause())
                .param("maxwaitMicros", settings.maxwaitMicros())
                .param("recordsBurst", event.recordsBurstEnd())
                .update();
        // 1 = inserted (or, with the driver's found-rows default, an unchanged duplicate); 2 = extended.
        if (rows > 2) {
            throw new IllegalStateException("arming session " + event.sessionId() + " touched " + rows + " rows");
        }
        // the earliest this arm can make the timer due: its window, or its max-wait deadline
        Instant window = event.acceptedAt().plusNanos(step.window().micros() * 1000);
        Instant deadline = oldest.plusNanos(settings.maxwaitMicros() * 1000);
        wake.armed(window.isBefore(deadline) ? window : deadline);
        pacing.record(event.sessionId(), seen, step);
        return rows > 0;
    }
}
