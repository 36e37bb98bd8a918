package dev.settle.debounce;

import com.zaxxer.hikari.HikariDataSource;
import dev.settle.contracts.MessageAccepted;
import dev.settle.contracts.SessionReady;
import dev.settle.schema.DebounceTiming;
import dev.settle.testsupport.LocalMariaDb;
import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.core.KafkaTemplate;

import java.time.Duration;
import java.time.Instant;
import java.time.temporal.ChronoUnit;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Every DATETIME(6) parameter is bound as text ({@code DbTime}), because on MariaDB 10.11 Connector/J drops the
 * fractional seconds of a temporal parameter: it does so when the server's version is below 5.6.4, and MariaDB
 * before 11 announces {@code 5.5.5-10.x}. Bound as a temporal, the firer's guarded delete ({@code fire_at = ?},
 * bound from the value it had just read) would match nothing, every round would roll back and no timer would
 * fire, and arming would lose up to a second of its window. Runs where 127.0.0.1:3306 answers, skipped with the
 * reason printed otherwise; the embedded MariaDB 11.4 does not truncate, so it cannot show the fault.
 */
class LocalMariaDb1011TimerTest {
    private static final DebounceTiming TIMING = new DebounceTiming(Duration.ofMillis(600), Duration.ofSeconds(10));
    private static final DebounceSettings SETTINGS =
            new DebounceSettings(Duration.ofMillis(20), 200, Duration.ofSeconds(3));

    @Test
    void a_timer_armed_with_microseconds_keeps_them_and_fires_exactly_once() {
        try (HikariDataSource ds =
                Databases.migratedAt(LocalMariaDb.newDatabaseOrSkip("LocalMariaDb1011TimerTest", "settle_timer_"))) {
            JdbcClient jdbc = JdbcClient.create(ds);
            System.out.println("LocalMariaDb1011TimerTest ran on "
                    + jdbc.sql("SELECT VERSION()").query(String.class).single());
            Sessions sessions = new Sessions(jdbc);
            long session = sessions.insert(1, 0, 0, null, null, null, null);
            // accepted a window and a bit ago, at .123456 of a second: the timer is due now
            Instant accepted = sessions.dbNow()
                    .minus(TIMING.window())
                    .minusSeconds(1)
                    .truncatedTo(ChronoUnit.SECONDS)
                    .plusNanos(123_456_000);
            assertThat(TestTimers.fixed(jdbc, TIMING).arm(new MessageAccepted(session, 1, accepted, accepted)))
                    .isTrue();
            assertThat(sessions.timer(session))
                    .get()
                    .extracting(Sessions.Timer::fireAt)
                    .isEqualTo(accepted.plus(TIMING.window()));

            KafkaTemplate<String, String> kafka = KafkaEvents.template(SharedInfra.kafkaBootstrap(), 5000);
            try (ReadyEvents ready = new ReadyEvents()) {
                TimerFirer firer = new TimerFirer(
                        jdbc,
                        new DataSourceTransactionManager(ds),
                        kafka,
                        SETTINGS,
                        new io.micrometer.core.instrument.simple.SimpleMeterRegistry());
                assertThat(firer.fireDue()).isEqualTo(1);
                assertThat(firer.fireDue()).isZero();
                assertThat(sessions.timer(session)).isEmpty();
                ready.drainToEnd();
                assertThat(ready.of(session)).extracting(SessionReady::version).containsExactly(1L);
            } finally {
                kafka.destroy();
            }
        }
    }
}
