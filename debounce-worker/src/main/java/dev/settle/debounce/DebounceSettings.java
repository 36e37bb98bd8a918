package dev.settle.debounce;

import dev.settle.schema.DebounceTiming;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

import java.time.Duration;

/**
 * How the timer firer polls ({@code settle.debounce.*}; environment {@code SETTLE_DEBOUNCE_POLL_INTERVAL},
 * {@code SETTLE_DEBOUNCE_BATCH_SIZE}). The window and max-wait under the same prefix are {@link DebounceTiming},
 * shared with the agent.
 *
 * @param pollInterval the longest {@link TimerFirer} sleeps between looks at the earliest due timer (it sleeps less when one is due sooner)
 * @param batchSize    most timers fired in one transaction
 */
@ConfigurationProperties("settle.debounce")
public record DebounceSettings(
        @DefaultValue("20ms") Duration pollInterval,
        @DefaultValue("200") int batchSize) {

    public DebounceSettings {
        DebounceTiming.requirePositive("settle.debounce.poll-interval", pollInterval);
        if (batchSize < 1) {
            throw new IllegalArgumentException("settle.debounce.batch-size must be at least 1, was " + batchSize);
        }
    }
}
