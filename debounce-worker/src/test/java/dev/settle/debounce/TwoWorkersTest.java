package dev.settle.debounce;

import dev.settle.contracts.MessageAccepted;
import dev.settle.contracts.SessionReady;
import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.context.ConfigurableApplicationContext;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/** Two worker instances poll one timer table: every armed timer is published exactly once in total. */
class TwoWorkersTest {
    private static final int SESSIONS = 200;

    @Test
    void two_workers_on_one_database_fire_each_timer_exactly_once() throws Exception {
        String url = SharedInfra.newDatabase("two_workers");
        String group = "debounce-two-" + System.nanoTime();
        // Small batches and the same due time for all: the two firers race for the same rows many times.
        Map<String, Object> props = Map.of(
                "settle.debounce.window",
                "1s",
                "settle.debounce.maxwait",
                "10s",
                "settle.debounce.batch-size",
                "10",
                "settle.debounce.poll-interval",
                "5ms");
        try (ConfigurableApplicationContext a = Workers.start(url, group, props);
                ConfigurableApplicationContext b = Workers.start(url, group, props);
                ReadyEvents ready = new ReadyEvents()) {
            Sessions sessions = new Sessions(Workers.jdbc(a));
            List<MessageAccepted> events = sessions.acceptMany(SESSIONS);
            List<Long> ids = events.stream().map(MessageAccepted::sessionId).toList();
            // Arm from several threads through both instances, as two listeners would.
            try (ExecutorService pool = Executors.newFixedThreadPool(8)) {
                List<Future<Boolean>> armed = new ArrayList<>();
                for (int i = 0; i < events.size(); i++) {
                    DebounceTimers via = (i % 2 == 0 ? a : b).getBean(DebounceTimers.class);
                    MessageAccepted e = events.get(i);
                    armed.add(pool.submit(() -> via.arm(e)));
                }
                for (Future<Boolean> f : armed) {
                    assertThat(f.get()).isTrue();
                }
            }

            ready.awaitFirst(ids);
            await("every timer to fire")
                    .atMost(Duration.ofSeconds(20))
                    .pollInterval(Duration.ofMillis(10))
                    .pollInSameThread()
                    .until(() -> sessions.timers(ids) == 0);
            ready.drainToEnd();

            List<SessionReady> fired = ready.of(ids);
            assertThat(fired).hasSize(SESSIONS);
            assertThat(fired).extracting(SessionReady::sessionId).doesNotHaveDuplicates();
            assertThat(fired).extracting(SessionReady::cause).containsOnly("window");
            long firedByA = a.getBean(TimerFirer.class).firedCount();
            long firedByB = b.getBean(TimerFirer.class).firedCount();
            LoggerFactory.getLogger(TwoWorkersTest.class).info("fired by a: {}, by b: {}", firedByA, firedByB);
            assertThat(firedByA + firedByB).isEqualTo(SESSIONS);
        }
    }
}
