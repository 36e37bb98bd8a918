package dev.settle.debounce;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

import java.time.Duration;

/**
 * Timing of the debounce timer ({@code settle.debounce.*}; environment {@code SETTLE_DEBOUNCE_WINDOW},
 * {@code SETTLE_DEBOUNCE_MAXWAIT}, ...).
 *
 * @param window       quiet time after the latest message before the session is answered
 * @param maxwait      bound on the wait, counted from the oldest unanswered message (fire_at never passes it)
 * @param pollInterval the longest {@link TimerFirer} sleeps between looks at the earliest due timer (it sleeps less when one is due sooner)
 * @param batchSize    most timers fired in one transaction
 */
@ConfigurationProperties("settle.debounce")
public record DebounceSettings(
        @DefaultValue("1500ms") Duration window,
        @DefaultValue("10s") Duration maxwait,
        @DefaultValue("20ms") Duration pollInterval,
        @DefaultValue("200") int batchSize) {

    public DebounceSettings {
        requirePositive("settle.debounce.window", window);
        requirePositive("settle.debounce.maxwait", maxwait);
        requirePositive("settle.debounce.poll-interval", pollInterval);
        if (batchSize < 1) {
            throw new IllegalArgumentException("settle.debounce.batch-size must be at least 1, was " + batchSize);
        }
    }

    static void requirePositive(String key, Duration value) {
        if (value == null || value.isNegative() || value.isZero()) {
            throw new IllegalArgumentException(key + " must be a positive duration, was " + value);
        }
    }

    /** SQL {@code INTERVAL ... MICROSECOND} operand; DATETIME(6) has microsecond precision. */
    static long micros(Duration d) {
        return d.toNanos() / 1_000;
    }
}
