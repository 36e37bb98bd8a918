package dev.settle.debounce;

import dev.settle.contracts.MessageAccepted;
import dev.settle.contracts.TypingSignal;
import dev.settle.schema.DbTime;
import dev.settle.schema.DebounceTiming;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;

/**
 * Typing signals hold a session's armed timer: while the user keeps typing, the burst is not over.
 *
 * <p>A signal at {@code signalAt} (the database clock, read by ingest-api) holds the timer until
 * {@code signalAt + typinghold}, never past its {@code deadline_at} (max-wait of the oldest unanswered message):
 * {@link #HOLD} sets {@code held_until} and {@code fire_at = LEAST(GREATEST(window_fire_at, held_until), deadline_at)},
 * where {@code window_fire_at} is what the messages alone give. It is one UPDATE of the timer row, never an
 * INSERT: a session with no timer (nothing unanswered, or its turn already fired) gets nothing from a signal. A
 * row that {@link TimerFirer} holds locked while it publishes makes the UPDATE wait, then find the row gone. A
 * signal that found no row is kept for a moment ({@link EarlySignals}): it may have overtaken the
 * {@code MessageAccepted} of the message it follows, and {@link #armed} applies it once that message armed the timer.
 * Counted as {@code settle.typing.early{outcome}}: {@code kept}, {@code full} (not kept), and of the kept ones
 * {@code held} (it held the timer its message armed) or {@code stale}.
 *
 * <p>Order between signals and messages is judged on the database clock, not on arrival, so reordered events
 * leave the same row:
 * <ul>
 *   <li>A signal from before the latest message the timer armed for ({@code signalAt <= last_message_at}) is stale
 *       and changes nothing: the user sent what was typed then.</li>
 *   <li>A message ends a hold whose signal is not later than the message ({@link #afterMessage}); a hold from a
 *       later signal stays (the user is typing the next one).</li>
 *   <li>Holds only grow (GREATEST), and a timer already due at its deadline is left alone.</li>
 * </ul>
 * Every assignment below gives the same result whether the database evaluates them left to right or all from the
 * old row.
 */
@Component
public class TypingHolds {
    private static final String SIGNAL_AT = "CAST(:signalAt AS DATETIME(6))";
    private static final String HOLD_END = "(" + SIGNAL_AT + " + INTERVAL :holdMicros MICROSECOND)";
    private static final String HELD =
            "LEAST(GREATEST(COALESCE(held_until, " + HOLD_END + "), " + HOLD_END + "), deadline_at)";

    static final String HOLD = """
            UPDATE debounce_timer
               SET typing_at      = GREATEST(COALESCE(typing_at, %s), %s),
                   held_until     = %s,
                   window_fire_at = COALESCE(window_fire_at, fire_at),
                   fire_at        = LEAST(GREATEST(COALESCE(window_fire_at, fire_at), %s), deadline_at)
             WHERE session_id = :sessionId
               AND fire_at < deadline_at
               AND (last_message_at IS NULL OR last_message_at < %s)
            """.formatted(SIGNAL_AT, SIGNAL_AT, HELD, HELD, SIGNAL_AT);

    /**
     * The assignments by which a message armed at {@code acceptedAt} (an SQL expression) updates an existing timer
     * row for typing: {@code last_message_at} moves forward, and a hold whose signal is not after the message ends.
     * For the ON DUPLICATE KEY UPDATE of {@link DebounceTimers#ARM}, before its {@code fire_at}.
     */
    static String afterMessage(String acceptedAt) {
        return """
                  last_message_at = GREATEST(COALESCE(debounce_timer.last_message_at, %1$s), %1$s),
                  held_until      = CASE WHEN debounce_timer.typing_at > %1$s THEN debounce_timer.held_until END,
                  typing_at       = CASE WHEN debounce_timer.typing_at > %1$s THEN debounce_timer.typing_at END,""".formatted(acceptedAt);
    }

    static final String EARLY_METRIC = "settle.typing.early";

    private final JdbcClient jdbc;
    private final DebounceSettings settings;
    private final MeterRegistry meters;
    private final EarlySignals early;

    public TypingHolds(JdbcClient jdbc, DebounceSettings settings, MeterRegistry meters) {
        this.jdbc = jdbc;
        this.settings = settings;
        this.meters = meters;
        this.early = new EarlySignals(settings.typinghold());
    }

    /**
     * Holds the session's timer; a signal that finds no row to update is kept for {@link #armed}.
     *
     * @return whether the signal held the session's timer (false: no timer, a stale signal, or due at deadline)
     */
    public boolean hold(TypingSignal signal) {
        if (update(signal)) {
            return true;
        }
        count(early.keep(signal) ? "kept" : "full");
        return false;
    }

    /**
     * After {@code message} armed its session's timer: applies a signal that arrived before it and found no timer,
     * if one is kept (the staleness rule of {@link #HOLD} judges it against the message).
     *
     * @return whether a kept signal held the timer
     */
    public boolean armed(MessageAccepted message) {
        TypingSignal kept = early.take(message.sessionId());
        if (kept == null) {
            return false;
        }
        boolean held = update(kept);
        count(held ? "held" : "stale");
        return held;
    }

    private void count(String outcome) {
        meters.counter(EARLY_METRIC, "outcome", outcome).increment();
    }

    private boolean update(TypingSignal signal) {
        return jdbc.sql(HOLD)
                        .param("sessionId", signal.sessionId())
                        .param("signalAt", DbTime.utc(signal.signalAt()))
                        .param("holdMicros", DebounceTiming.micros(settings.typinghold()))
                        .update()
                > 0;
    }
}
