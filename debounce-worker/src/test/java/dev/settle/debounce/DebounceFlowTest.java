package dev.settle.debounce;

import dev.settle.contracts.MessageAccepted;
import dev.settle.contracts.SessionReady;
import dev.settle.testsupport.SharedInfra;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * MessageAccepted in, SessionReady out, through one running worker (real MariaDB, real broker). Every time
 * compared comes from the database clock, carried in the events.
 */
class DebounceFlowTest {
    private static final Duration WINDOW = Duration.ofMillis(600);
    private static final Duration MAXWAIT = Duration.ofMillis(1500);
    private static final String GROUP = "debounce-flow-" + System.nanoTime();

    private static ConfigurableApplicationContext worker;
    private static Sessions sessions;
    private static ReadyEvents ready;

    @BeforeAll
    static void start() {
        worker = Workers.start(
                SharedInfra.newDatabase("flow"),
                GROUP,
                Map.of(
                        "settle.debounce.window", WINDOW.toMillis() + "ms",
                        "settle.debounce.maxwait", MAXWAIT.toMillis() + "ms"));
        sessions = new Sessions(Workers.jdbc(worker));
        ready = new ReadyEvents();
    }

    @AfterAll
    static void stop() {
        ready.close();
        worker.close();
    }

    /** Once the sessions' timers are gone nothing more can fire for them: read the topic to its end. */
    private static List<SessionReady> allFiredFor(List<Long> ids) {
        await("timers of " + ids + " to fire")
                .atMost(Duration.ofSeconds(20))
                .pollInterval(Duration.ofMillis(10))
                .pollInSameThread()
                .until(() -> sessions.timers(ids) == 0);
        ready.drainToEnd();
        return ready.of(ids);
    }

    @Test
    void burst_inside_the_window_fires_once_with_cause_window_after_the_last_message_plus_window() {
        long s = sessions.create();
        MessageAccepted last = null;
        for (int i = 0; i < 3; i++) {
            last = sessions.accept(s);
            KafkaEvents.publish(last);
        }

        SessionReady fired = ready.awaitFirst(s);

        assertThat(allFiredFor(List.of(s))).containsExactly(fired);
        assertThat(fired.cause()).isEqualTo("window");
        assertThat(fired.version()).isEqualTo(3);
        assertThat(fired.firedAt()).isAfterOrEqualTo(last.acceptedAt().plus(WINDOW));
    }

    @Test
    void steady_typing_fires_with_cause_maxwait_at_the_deadline() throws InterruptedException {
        long s = sessions.create();
        MessageAccepted first = sessions.accept(s);
        KafkaEvents.publish(first);
        Instant deadline = first.oldestUnansweredAt().plus(MAXWAIT);
        MessageAccepted latest = first;
        while (latest.acceptedAt().isBefore(deadline.plusMillis(400))) {
            Thread.sleep(Duration.ofMillis(200));
            latest = sessions.accept(s);
            KafkaEvents.publish(latest);
        }

        SessionReady fired = ready.awaitFirst(s);

        assertThat(fired.cause()).isEqualTo("maxwait");
        assertThat(fired.version()).isGreaterThan(1);
        assertThat(fired.firedAt()).isBetween(deadline, deadline.plusSeconds(2));
    }

    @Test
    void redelivered_event_for_an_answered_version_arms_nothing() {
        Instant now = sessions.dbNow();
        long s = sessions.insert(5, 5, 0, null, now, null, null);

        RecordMetadata sent = KafkaEvents.publish(new MessageAccepted(s, 5, now, now));
        KafkaEvents.awaitProcessed(GROUP, sent);

        assertThat(sessions.timer(s)).isEmpty();
        assertThat(allFiredFor(List.of(s))).isEmpty();
    }

    @Test
    void malformed_events_are_skipped_and_the_partition_keeps_flowing() {
        long s = sessions.create();
        KafkaEvents.send(String.valueOf(s), "{not json");
        KafkaEvents.send(String.valueOf(s), "{\"sessionId\":" + s + "}");
        MessageAccepted event = sessions.accept(s);
        KafkaEvents.publish(event);

        SessionReady fired = ready.awaitFirst(s);

        assertThat(allFiredFor(List.of(s))).containsExactly(fired);
        assertThat(fired.cause()).isEqualTo("window");
        assertThat(fired.version()).isEqualTo(1);
    }

    @Test
    void stranded_session_gets_one_session_ready_with_cause_sweeper_but_leased_and_failed_ones_none() {
        // This context's grace is 1h and its scheduled sweep never runs: the test sweeps once itself.
        Instant now = sessions.dbNow();
        Instant old = now.minus(Duration.ofHours(2));
        long stranded = sessions.insert(2, 1, 0, old, old, null, null);
        long agentDied = sessions.insert(1, 0, 0, old, old, "dead-agent", now.minusSeconds(1));
        long leased = sessions.insert(1, 0, 0, old, old, "live-agent", now.plusSeconds(3600));
        long failed = sessions.insert(3, 0, 3, old, old, null, null);

        assertThat(worker.getBean(StrandedSessionSweeper.class).sweep()).isEqualTo(2);

        List<SessionReady> fired = allFiredFor(List.of(stranded, agentDied, leased, failed));
        assertThat(fired).hasSize(2);
        assertThat(fired).extracting(SessionReady::sessionId).containsExactlyInAnyOrder(stranded, agentDied);
        assertThat(fired).extracting(SessionReady::cause).containsOnly("sweeper");
        assertThat(ready.of(stranded).getFirst().version()).isEqualTo(2);
        assertThat(ready.of(stranded).getFirst().firedAt()).isAfterOrEqualTo(now);
    }
}
