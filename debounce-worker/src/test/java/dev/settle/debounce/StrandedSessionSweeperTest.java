package dev.settle.debounce;

import com.zaxxer.hikari.HikariDataSource;
import dev.settle.schema.DbTime;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;

import java.time.Duration;
import java.time.Instant;

import static org.assertj.core.api.Assertions.assertThat;

/** The sweep statement alone (no scheduler, no firer), on one database, so every count is exact. */
class StrandedSessionSweeperTest {
    private static HikariDataSource dataSource;
    private static JdbcClient jdbc;
    private static Sessions sessions;
    private static StrandedSessionSweeper sweeper;

    @BeforeAll
    static void migrate() {
        dataSource = Databases.migrated("sweeper");
        jdbc = JdbcClient.create(dataSource);
        sessions = new Sessions(jdbc);
        sweeper = new StrandedSessionSweeper(
                jdbc, new SweeperSettings(Duration.ofHours(1), Duration.ofSeconds(5)), TimerWake.NONE);
    }

    @AfterAll
    static void close() {
        dataSource.close();
    }

    @Test
    void arms_a_due_now_timer_for_exactly_the_stranded_sessions_and_only_once() {
        Instant now = sessions.dbNow();
        Instant old = now.minusSeconds(60);
        long stranded = sessions.insert(3, 1, 0, old, old, null, null);
        long leaseExpired = sessions.insert(2, 0, 0, old, old, "dead-agent", now.minusSeconds(1));
        long leaseLive = sessions.insert(2, 0, 0, old, old, "live-agent", now.plusSeconds(3600));
        long failed = sessions.insert(4, 1, 4, old, old, null, null);
        long answered = sessions.insert(4, 4, 0, null, old, null, null);
        long recent = sessions.insert(1, 0, 0, now, now, null, null);
        long timed = sessions.insert(1, 0, 0, old, old, null, null);
        Instant farFire = now.plusSeconds(3600);
        jdbc.sql("""
                        INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at)
                        VALUES (:id, :fire, :fire, 1, 'message', UTC_TIMESTAMP(6))
                        """).param("id", timed).param("fire", DbTime.utc(farFire)).update();

        Instant before = sessions.dbNow();
        assertThat(sweeper.sweep()).isEqualTo(2);
        Instant after = sessions.dbNow();

        Sessions.Timer timer = sessions.timer(stranded).orElseThrow();
        assertThat(timer.armedBy()).isEqualTo("sweeper");
        assertThat(timer.armedVersion()).isEqualTo(3);
        assertThat(timer.fireAt()).isBetween(before, after).isEqualTo(timer.deadlineAt());
        assertThat(sessions.timer(leaseExpired).orElseThrow().armedBy()).isEqualTo("sweeper");
        assertThat(sessions.timer(leaseLive)).isEmpty();
        assertThat(sessions.timer(failed)).isEmpty();
        assertThat(sessions.timer(answered)).isEmpty();
        assertThat(sessions.timer(recent)).isEmpty();
        Sessions.Timer untouched = sessions.timer(timed).orElseThrow();
        assertThat(untouched.fireAt()).isEqualTo(farFire);
        assertThat(untouched.armedBy()).isEqualTo("message");

        assertThat(sweeper.sweep()).isZero();
        assertThat(sessions.timer(stranded).orElseThrow()).isEqualTo(timer);
    }
}
