package dev.settle.debounce;

import dev.settle.schema.DebounceTiming;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;

import java.time.Duration;

/**
 * The adaptive window ({@code settle.debounce.adaptive}, {@code settle.debounce.maxwindow}; environment
 * {@code SETTLE_DEBOUNCE_ADAPTIVE}, {@code SETTLE_DEBOUNCE_MAXWINDOW}), read by the debounce worker only: the
 * window it learns per session ({@link PacingRule}) lies between the base window of {@link DebounceTiming} and
 * {@link #maxwindow(DebounceTiming)}.
 *
 * @param adaptive  learn each session's window; false arms every timer with the base window
 * @param maxwindow the largest learned window; unset: 4 s, but at least the window and at most max-wait
 */
@ConfigurationProperties("settle.debounce")
public record PacingSettings(@DefaultValue("true") boolean adaptive, Duration maxwindow) {
    static final Duration DEFAULT_MAXWINDOW = Duration.ofSeconds(4);

    public PacingSettings {
        if (maxwindow != null) {
            DebounceTiming.requirePositive("settle.debounce.maxwindow", maxwindow);
        }
    }

    /**
     * The largest learned window under this timing.
     *
     * @throws IllegalArgumentException when a configured maxwindow is shorter than the window or longer than
     *     max-wait
     */
    public Duration maxwindow(DebounceTiming timing) {
        if (maxwindow == null) {
            Duration d = DEFAULT_MAXWINDOW.compareTo(timing.maxwait()) < 0 ? DEFAULT_MAXWINDOW : timing.maxwait();
            return d.compareTo(timing.window()) > 0 ? d : timing.window();
        }
        if (maxwindow.compareTo(timing.window()) < 0 || maxwindow.compareTo(timing.maxwait()) > 0) {
            throw new IllegalArgumentException("settle.debounce.maxwindow (" + maxwindow
                    + ") must lie between settle.debounce.window (" + timing.window()
                    + ") and settle.debounce.maxwait (" + timing.maxwait() + ")");
        }
        return maxwindow;
    }
}
