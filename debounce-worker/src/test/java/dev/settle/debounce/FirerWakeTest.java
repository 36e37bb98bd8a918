package dev.settle.debounce;

import dev.settle.contracts.MessageAccepted;
import dev.settle.contracts.SessionReady;
import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A timer armed in this process wakes the firer: with a poll interval far longer than the window, every timer still
 * fires at its due time, not at the firer's next look (up to the poll interval later).
 */
class FirerWakeTest {
    private static final Duration POLL = Duration.ofSeconds(5);
    private static final Duration WINDOW = Duration.ofMillis(150);
    /** Far below the poll interval: a fire this close to its due time was woken, not found by a look. */
    private static final Duration ON_TIME = Duration.ofMillis(800);

    private static ConfigurableApplicationContext worker;
    private static Sessions sessions;
    private static ReadyEvents ready;

    @BeforeAll
    static void start() {
        worker = Workers.start(
                SharedInfra.newDatabase("firer_wake"),
                "debounce-wake-" + System.nanoTime(),
                Map.of(
                        "settle.debounce.poll-interval", POLL.toMillis() + "ms",
                        "settle.debounce.window", WINDOW.toMillis() + "ms",
                        "settle.debounce.maxwait", "1500ms",
                        "settle.sweeper.interval", "200ms",
                        "settle.sweeper.grace", "1s"));
        sessions = new Sessions(Workers.jdbc(worker));
        ready = new ReadyEvents();
    }

    @AfterAll
    static void stop() {
        ready.close();
        worker.close();
    }

    @Test
    void a_message_whose_window_is_shorter_than_the_poll_interval_fires_at_its_due_time() {
        for (int i = 0; i < 3; i++) { // each one late by up to the poll interval without the wake
            long s = sessions.create();
            MessageAccepted accepted = sessions.accept(s);
            KafkaEvents.publish(accepted);

            SessionReady fired = ready.awaitFirst(s);

            Instant due = accepted.acceptedAt().plus(WINDOW);
            assertThat(fired.cause()).isEqualTo("window");
            assertThat(fired.firedAt()).as("round %d", i).isBetween(due, due.plus(ON_TIME));
        }
    }

    @Test
    void a_stranded_session_the_sweeper_arms_fires_at_once() {
        Instant now = sessions.dbNow();
        Instant old = now.minusSeconds(30);
        long s = sessions.insert(3, 1, 0, old, old, "dead-agent", now.minusMillis(1));

        SessionReady fired = ready.awaitFirst(s);
        sessions.markAnswered(s);

        assertThat(fired.cause()).isEqualTo("sweeper");
        // swept within its 200 ms interval, then fired at once instead of at the next look
        assertThat(fired.firedAt()).isBetween(now, now.plus(ON_TIME));
    }
}
