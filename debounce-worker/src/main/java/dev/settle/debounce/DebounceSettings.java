package dev.settle.debounce;

import dev.settle.schema.DebounceTiming;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

import java.time.Duration;

/**
 * How the timer firer polls and how long a typing signal holds a timer ({@code settle.debounce.*}; environment
 * {@code SETTLE_DEBOUNCE_POLLINTERVAL}, {@code SETTLE_DEBOUNCE_BATCHSIZE}, {@code SETTLE_DEBOUNCE_TYPINGHOLD}). The
 * window and max-wait under the same prefix are {@link DebounceTiming}, shared with the agent.
 *
 * @param pollInterval the longest {@link TimerFirer} sleeps between looks at the earliest due timer (less when one is
 *                     due sooner; a timer armed in this process wakes it): how late a timer armed elsewhere (an
 *                     agent's re-arm, a dead instance's timer) fires at most, and {@code 1 / pollInterval} is how
 *                     often an idle instance asks the database
 * @param batchSize    most timers fired in one transaction
 * @param typinghold   a typing signal holds the session's armed timer until this long after the signal (never past
 *                     max-wait); a client repeats its signal while the user types
 */
@ConfigurationProperties("settle.debounce")
public record DebounceSettings(
        @DefaultValue("100ms") Duration pollInterval,
        @DefaultValue("200") int batchSize,
        @DefaultValue("3s") Duration typinghold) {

    public DebounceSettings {
        DebounceTiming.requirePositive("settle.debounce.poll-interval", pollInterval);
        DebounceTiming.requirePositive("settle.debounce.typinghold", typinghold);
        if (batchSize < 1) {
            throw new IllegalArgumentException("settle.debounce.batch-size must be at least 1, was " + batchSize);
        }
    }
}
