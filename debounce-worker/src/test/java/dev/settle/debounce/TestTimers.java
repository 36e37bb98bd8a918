package dev.settle.debounce;

import dev.settle.schema.DebounceTiming;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.springframework.jdbc.core.simple.JdbcClient;

/** {@link DebounceTimers} without an application context. */
final class TestTimers {
    private TestTimers() {}

    /** Armed with the fixed window ({@code settle.debounce.adaptive=false}): tests of the arming statement. */
    static DebounceTimers fixed(JdbcClient jdbc, DebounceTiming timing) {
        return of(jdbc, timing, new PacingSettings(false, null), new SimpleMeterRegistry());
    }

    /** Armed with the adaptive window, the deployment's default. */
    static DebounceTimers adaptive(JdbcClient jdbc, DebounceTiming timing) {
        return of(jdbc, timing, new PacingSettings(true, null), new SimpleMeterRegistry());
    }

    static DebounceTimers of(JdbcClient jdbc, DebounceTiming timing, PacingSettings settings, MeterRegistry meters) {
        return new DebounceTimers(jdbc, timing, new SessionPacing(jdbc, timing, settings, meters), TimerWake.NONE);
    }
}
