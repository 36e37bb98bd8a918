package dev.settle.debounce;

import dev.settle.contracts.MessageAccepted;
import dev.settle.contracts.SessionReady;
import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** The timer lives in the database, not in the worker: a restart between arm and fire loses nothing. */
class TimersSurviveRestartTest {
    private static final Duration WINDOW = Duration.ofSeconds(3);

    @Test
    void timer_armed_before_a_restart_fires_exactly_once_after_it() {
        String url = SharedInfra.newDatabase("restart");
        String group = "debounce-restart-" + System.nanoTime();
        Map<String, Object> props =
                Map.of("settle.debounce.window", WINDOW.toMillis() + "ms", "settle.debounce.maxwait", "10s");
        ConfigurableApplicationContext first = Workers.start(url, group, props);
        Sessions sessions = new Sessions(JdbcClient.create(new DriverManagerDataSource(url, "root", "")));
        try (ReadyEvents ready = new ReadyEvents()) {
            long s = sessions.create();
            MessageAccepted event = sessions.accept(s);
            KafkaEvents.awaitProcessed(group, KafkaEvents.publish(event));
            assertThat(sessions.timer(s)).isPresent();

            first.close();

            assertThat(sessions.timer(s).orElseThrow().fireAt())
                    .as("still armed after the shutdown (window too short for this machine if not)")
                    .isAfter(sessions.dbNow());
            ready.drainToEnd();
            assertThat(ready.of(s)).isEmpty();

            try (ConfigurableApplicationContext second = Workers.start(url, group, props)) {
                SessionReady fired = ready.awaitFirst(s);
                await("the timer row to go")
                        .atMost(Duration.ofSeconds(20))
                        .pollInterval(Duration.ofMillis(10))
                        .pollInSameThread()
                        .until(() -> sessions.timer(s).isEmpty());
                ready.drainToEnd();

                assertThat(ready.of(List.of(s))).containsExactly(fired);
                assertThat(fired.cause()).isEqualTo("window");
                assertThat(fired.version()).isEqualTo(1);
                assertThat(fired.firedAt()).isAfterOrEqualTo(event.acceptedAt().plus(WINDOW));
                assertThat(second.getBean(TimerFirer.class).firedCount()).isEqualTo(1);
            }
        } finally {
            first.close();
        }
    }
}
