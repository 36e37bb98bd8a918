package dev.settle.debounce;

import dev.settle.schema.DebounceTiming;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;

import java.time.Duration;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The documented defaults and environment variable names of the worker's settings. */
class SettingsBindingTest {

    private static Binder binder(Map<String, Object> env) {
        StandardEnvironment environment = new StandardEnvironment();
        environment
                .getPropertySources()
                .addFirst(new SystemEnvironmentPropertySource(
                        StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME + "-test", env));
        environment
                .getPropertySources()
                .addLast(new MapPropertySource("defaults", DebounceWorkerApplication.defaultProperties()));
        return new Binder(ConfigurationPropertySources.get(environment));
    }

    @Test
    void defaults_are_window_1500ms_maxwait_10s_poll_100ms_batch_200_sweep_2s_grace_5s() {
        Binder binder = binder(Map.of());
        assertThat(binder.bindOrCreate("settle.debounce", DebounceTiming.class))
                .isEqualTo(new DebounceTiming(Duration.ofMillis(1500), Duration.ofSeconds(10)));
        assertThat(binder.bindOrCreate("settle.debounce", DebounceSettings.class))
                .isEqualTo(new DebounceSettings(Duration.ofMillis(100), 200, Duration.ofSeconds(3)));
        assertThat(binder.bindOrCreate("settle.sweeper", SweeperSettings.class))
                .isEqualTo(new SweeperSettings(Duration.ofSeconds(2), Duration.ofSeconds(5)));
        PacingSettings pacing = binder.bindOrCreate("settle.debounce", PacingSettings.class);
        assertThat(pacing).isEqualTo(new PacingSettings(true, null));
        assertThat(pacing.maxwindow(new DebounceTiming(Duration.ofMillis(1500), Duration.ofSeconds(10))))
                .isEqualTo(Duration.ofSeconds(4));
    }

    @Test
    void the_adaptive_window_is_set_by_SETTLE_DEBOUNCE_ADAPTIVE_and_SETTLE_DEBOUNCE_MAXWINDOW() {
        Binder binder = binder(Map.of("SETTLE_DEBOUNCE_ADAPTIVE", "false", "SETTLE_DEBOUNCE_MAXWINDOW", "3s"));
        assertThat(binder.bindOrCreate("settle.debounce", PacingSettings.class))
                .isEqualTo(new PacingSettings(false, Duration.ofSeconds(3)));
    }

    @Test
    void environment_variables_override_the_defaults() {
        Binder binder = binder(
                Map.of("SETTLE_DEBOUNCE_WINDOW", "2s", "SETTLE_DEBOUNCE_MAXWAIT", "30s", "SETTLE_SWEEPER_GRACE", "9s"));
        DebounceTiming debounce = binder.bindOrCreate("settle.debounce", DebounceTiming.class);
        assertThat(debounce.window()).isEqualTo(Duration.ofSeconds(2));
        assertThat(debounce.maxwait()).isEqualTo(Duration.ofSeconds(30));
        assertThat(binder.bindOrCreate("settle.sweeper", SweeperSettings.class).grace())
                .isEqualTo(Duration.ofSeconds(9));
    }
}
