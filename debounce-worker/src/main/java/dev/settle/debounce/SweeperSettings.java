package dev.settle.debounce;

import dev.settle.schema.DebounceTiming;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

import java.time.Duration;

/**
 * Timing of the {@link StrandedSessionSweeper} ({@code settle.sweeper.*}).
 *
 * @param interval delay between two sweeps (also the delay before the first one)
 * @param grace    how long after a session's last message it may sit unanswered, with no timer and no live
 *                 lease, before it counts as stranded; longer than the window, so a normal fire-then-claim
 *                 hand-off is never mistaken for a stranded session
 */
@ConfigurationProperties("settle.sweeper")
public record SweeperSettings(
        @DefaultValue("2s") Duration interval,
        @DefaultValue("5s") Duration grace) {

    public SweeperSettings {
        DebounceTiming.requirePositive("settle.sweeper.interval", interval);
        if (grace == null || grace.isNegative()) {
            throw new IllegalArgumentException("settle.sweeper.grace must not be negative, was " + grace);
        }
    }
}
