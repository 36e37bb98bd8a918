package dev.settle.schema;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

import java.time.Duration;

/**
 * The debounce timing ({@code settle.debounce.window}, {@code settle.debounce.maxwait}; environment
 * {@code SETTLE_DEBOUNCE_WINDOW}, {@code SETTLE_DEBOUNCE_MAXWAIT}): one record read by the debounce worker, which
 * arms the timers, and by the agent, which re-arms them and honours max-wait when it commits or interrupts. Both
 * must see the same values, so the deployment sets them once for both. The rule they parameterise is
 * {@link SessionRules#timerFireAt}.
 *
 * @param window  quiet time after the latest message before the session is answered
 * @param maxwait bound on the wait, counted from the oldest unanswered message (fire_at never passes it)
 */
@ConfigurationProperties("settle.debounce")
public record DebounceTiming(
        @DefaultValue("1500ms") Duration window,
        @DefaultValue("10s") Duration maxwait) {

    public DebounceTiming {
        requirePositive("settle.debounce.window", window);
        requirePositive("settle.debounce.maxwait", maxwait);
    }

    /** @throws IllegalArgumentException unless {@code value} is a positive duration */
    public static void requirePositive(String key, Duration value) {
        if (value == null || value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(key + " must be a positive duration, was " + value);
        }
    }

    /** The window as an {@code INTERVAL ... MICROSECOND} operand (DATETIME(6) has microsecond precision). */
    public long windowMicros() {
        return micros(window);
    }

    /** Max-wait as an {@code INTERVAL ... MICROSECOND} operand. */
    public long maxwaitMicros() {
        return micros(maxwait);
    }

    /** A duration as an {@code INTERVAL ... MICROSECOND} operand. */
    public static long micros(Duration d) {
        return d.toNanos() / 1_000;
    }
}
