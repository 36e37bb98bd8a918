package dev.settle.debounce;

import com.zaxxer.hikari.HikariDataSource;
import dev.settle.contracts.SessionReady;
import dev.settle.schema.DbTime;
import dev.settle.testsupport.SharedInfra;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.kafka.support.SendResult;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.assertj.core.api.Assertions.tuple;
import static org.awaitility.Awaitility.await;

/** One firing round at a time (no loop): the cause of each fire, and what stays when publishing fails. */
class TimerFirerTest {
    private static final DebounceSettings SETTINGS =
            new DebounceSettings(Duration.ofMillis(20), 200, Duration.ofSeconds(3));

    private static HikariDataSource dataSource;
    private static JdbcClient jdbc;
    private static Sessions sessions;

    @BeforeAll
    static void migrate() {
        dataSource = Databases.migrated("firer");
        jdbc = JdbcClient.create(dataSource);
        sessions = new Sessions(jdbc);
    }

    @AfterAll
    static void close() {
        dataSource.close();
    }

    private static TimerFirer firer(KafkaTemplate<String, String> kafka, MeterRegistry meters) {
        return new TimerFirer(jdbc, new DataSourceTransactionManager(dataSource), kafka, SETTINGS, meters);
    }

    /** A firer whose rounds wait {@code publishTimeout} for the broker's acks. */
    private static TimerFirer firer(KafkaTemplate<String, String> kafka, Duration publishTimeout) {
        return new TimerFirer(
                jdbc,
                new DataSourceTransactionManager(dataSource),
                kafka,
                SETTINGS,
                new SimpleMeterRegistry(),
                publishTimeout);
    }

    /** {@code settle.debounce.fires} by cause: window, maxwait, sweeper (whatever their window tag). */
    private static List<Double> fires(MeterRegistry meters) {
        return List.of("window", "maxwait", "sweeper").stream()
                .map(cause -> meters.find("settle.debounce.fires").tag("cause", cause).counters().stream()
                        .mapToDouble(Counter::count)
                        .sum())
                .toList();
    }

    private static KafkaTemplate<String, String> kafka(String bootstrap) {
        return KafkaEvents.template(bootstrap, 1000);
    }

    private static void timer(long session, Instant fireAt, Instant deadlineAt, long version, String armedBy) {
        jdbc.sql("""
                        INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at)
                        VALUES (:id, :fire, :deadline, :version, :by, UTC_TIMESTAMP(6))
                        """)
                .param("id", session)
                .param("fire", DbTime.utc(fireAt))
                .param("deadline", DbTime.utc(deadlineAt))
                .param("version", version)
                .param("by", armedBy)
                .update();
    }

    @Test
    void a_failed_publish_rolls_back_and_the_next_round_fires_each_due_timer_once_with_its_cause() {
        Instant now = sessions.dbNow();
        long window = sessions.create();
        long maxwait = sessions.create();
        long sweeper = sessions.create();
        long notDue = sessions.create();
        timer(window, now.minusMillis(5), now.plusSeconds(5), 2, "message");
        timer(maxwait, now.minusMillis(3), now.minusMillis(3), 7, "message");
        timer(sweeper, now.minusMillis(1), now.minusMillis(1), 4, "sweeper");
        timer(notDue, now.plusSeconds(3600), now.plusSeconds(3600), 1, "message");
        jdbc.sql("UPDATE debounce_timer SET window_cause = 'learned' WHERE session_id = :id")
                .param("id", window)
                .update();
        List<Long> due = List.of(window, maxwait, sweeper);

        MeterRegistry meters = new SimpleMeterRegistry();
        KafkaTemplate<String, String> unreachable = kafka("127.0.0.1:1");
        try {
            assertThatThrownBy(() -> firer(unreachable, meters).fireDue()).isInstanceOf(IllegalStateException.class);
        } finally {
            unreachable.destroy();
        }
        assertThat(sessions.timers(due)).isEqualTo(3);
        assertThat(fires(meters)).as("a rolled-back round counts no fire").containsExactly(0.0, 0.0, 0.0);

        KafkaTemplate<String, String> broker = kafka(SharedInfra.kafkaBootstrap());
        try (ReadyEvents ready = new ReadyEvents()) {
            TimerFirer firer = firer(broker, meters);
            Instant before = sessions.dbNow();
            assertThat(firer.fireDue()).isEqualTo(3);
            assertThat(firer.fireDue()).isZero();
            assertThat(firer.firedCount()).isEqualTo(3);
            assertThat(fires(meters))
                    .as("fires by cause: window, maxwait, sweeper")
                    .containsExactly(1.0, 1.0, 1.0);
            assertThat(meters.find("settle.debounce.fires")
                            .tags("cause", "window", "window", "learned")
                            .counter()
                            .count())
                    .as("the fire of a learned window is tagged with it")
                    .isEqualTo(1.0);
            assertThat(meters.find("settle.debounce.fires")
                            .tags("cause", "maxwait", "window", "base")
                            .counter()
                            .count())
                    .isEqualTo(1.0);

            assertThat(sessions.timers(due)).isZero();
            assertThat(sessions.timer(notDue)).isPresent();
            ready.drainToEnd();
            assertThat(ready.of(due))
                    .extracting(SessionReady::sessionId, SessionReady::version, SessionReady::cause)
                    .containsExactlyInAnyOrder(
                            tuple(window, 2L, "window"), tuple(maxwait, 7L, "maxwait"), tuple(sweeper, 4L, "sweeper"));
            assertThat(ready.of(due)).extracting(SessionReady::firedAt).allMatch(t -> !t.isBefore(before));
        } finally {
            broker.destroy();
        }
    }

    @Test
    void a_timer_a_typing_signal_held_fires_with_cause_typing() {
        Instant now = sessions.dbNow();
        long typed = sessions.create();
        timer(typed, now.minusMillis(5), now.plusSeconds(5), 3, "message");
        assertThat(new TypingHolds(jdbc, SETTINGS, new SimpleMeterRegistry())
                        .hold(new dev.settle.contracts.TypingSignal(
                                typed, now.minus(SETTINGS.typinghold()).minusMillis(1))))
                .isTrue();

        MeterRegistry meters = new SimpleMeterRegistry();
        KafkaTemplate<String, String> broker = kafka(SharedInfra.kafkaBootstrap());
        try (ReadyEvents ready = new ReadyEvents()) {
            assertThat(firer(broker, meters).fireDue()).isEqualTo(1);
            assertThat(meters.counter("settle.debounce.fires", "cause", "typing", "window", "base")
                            .count())
                    .isEqualTo(1.0);
            ready.drainToEnd();
            assertThat(ready.of(List.of(typed)))
                    .extracting(SessionReady::sessionId, SessionReady::version, SessionReady::cause)
                    .containsExactly(tuple(typed, 3L, "typing"));
        } finally {
            broker.destroy();
        }
    }

    /**
     * A broker that takes records without acking any while it is away, as a real one does for a producer that still
     * has its metadata; once back, it takes them, and every later one, for real.
     */
    private static final class ReturningBroker extends KafkaTemplate<String, String> {
        private final KafkaTemplate<String, String> real;
        private final List<Runnable> held = new ArrayList<>();
        private boolean away = true;
        private int sentWhileAway;

        ReturningBroker(KafkaTemplate<String, String> real) {
            super(real.getProducerFactory());
            this.real = real;
        }

        @Override
        public synchronized CompletableFuture<SendResult<String, String>> send(String topic, String key, String data) {
            if (!away) {
                return real.send(topic, key, data);
            }
            sentWhileAway++;
            CompletableFuture<SendResult<String, String>> ack = new CompletableFuture<>();
            held.add(() -> real.send(topic, key, data).whenComplete((sent, failed) -> {
                if (failed != null) {
                    ack.completeExceptionally(failed);
                } else {
                    ack.complete(sent);
                }
            }));
            return ack;
        }

        synchronized int sentWhileAway() {
            return sentWhileAway;
        }

        synchronized void back() {
            away = false;
            held.forEach(Runnable::run);
            held.clear();
        }
    }

    @Test
    void while_the_broker_is_away_only_the_first_round_locks_and_publishes_its_timers() {
        Instant now = sessions.dbNow();
        long due = sessions.create();
        timer(due, now.minusMillis(5), now.plusSeconds(5), 4, "message");

        KafkaTemplate<String, String> real = kafka(SharedInfra.kafkaBootstrap());
        ReturningBroker broker = new ReturningBroker(real);
        try (ReadyEvents ready = new ReadyEvents()) {
            TimerFirer firer = firer(broker, Duration.ofMillis(200));
            assertThatThrownBy(firer::fireDue)
                    .as("the first round stops waiting for the acks and rolls back")
                    .isInstanceOf(IllegalStateException.class);
            assertThat(broker.sentWhileAway()).isEqualTo(1);
            for (int round = 0; round < 5; round++) {
                assertThat(firer.fireDue()).isZero();
            }
            assertThat(broker.sentWhileAway())
                    .as("the rounds after it lock and publish nothing while the first one's acks are pending")
                    .isEqualTo(1);
            assertThat(sessions.timer(due)).isPresent();

            broker.back();
            await("the round after the broker took the held event fires the timer")
                    .atMost(Duration.ofSeconds(20))
                    .until(() -> firer.fireDue() == 1);
            assertThat(sessions.timer(due)).isEmpty();
            ready.drainToEnd();
            assertThat(ready.of(due))
                    .as("the held event and the fire: a repeat is a harmless hint")
                    .extracting(SessionReady::version)
                    .containsExactly(4L, 4L);
        } finally {
            real.destroy();
        }
    }
}
