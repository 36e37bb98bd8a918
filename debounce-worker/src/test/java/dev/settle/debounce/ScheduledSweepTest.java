package dev.settle.debounce;

import dev.settle.contracts.SessionReady;
import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * The sweep runs by itself: a session whose agent died mid-turn (lease expired) and whose events are gone is
 * woken with no event at all. (Exact counts of the sweep are in StrandedSessionSweeperTest and
 * DebounceFlowTest; here it repeats every interval until the session is answered, as it should.)
 */
class ScheduledSweepTest {

    @Test
    void scheduled_sweep_wakes_a_session_whose_agent_died_without_any_event() {
        String group = "debounce-sweep-" + System.nanoTime();
        try (ConfigurableApplicationContext worker = Workers.start(
                        SharedInfra.newDatabase("scheduled_sweep"),
                        group,
                        Map.of("settle.sweeper.interval", "200ms", "settle.sweeper.grace", "1s"));
                ReadyEvents ready = new ReadyEvents()) {
            Sessions sessions = new Sessions(Workers.jdbc(worker));
            Instant now = sessions.dbNow();
            Instant old = now.minusSeconds(30);
            long s = sessions.insert(4, 2, 0, old, old, "dead-agent", now.minusMillis(1));

            SessionReady fired = ready.awaitFirst(s);
            sessions.markAnswered(s);
            await("the last sweeper timer to fire")
                    .atMost(Duration.ofSeconds(20))
                    .pollInterval(Duration.ofMillis(10))
                    .pollInSameThread()
                    .until(() -> sessions.timer(s).isEmpty());
            ready.drainToEnd();

            assertThat(fired.cause()).isEqualTo("sweeper");
            assertThat(fired.version()).isEqualTo(4);
            assertThat(ready.of(s)).extracting(SessionReady::cause).containsOnly("sweeper");
        }
    }
}
