package dev.settle.debounce;

import com.zaxxer.hikari.HikariDataSource;
import dev.settle.contracts.MessageAccepted;
import dev.settle.schema.DbTime;
import dev.settle.schema.DebounceTiming;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;

import java.time.Duration;
import java.time.Instant;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** The arming statement alone, on a real MariaDB with a non-UTC session time zone. */
class DebounceTimersTest {
    private static final Duration WINDOW = Duration.ofMillis(1500);
    private static final Duration MAXWAIT = Duration.ofSeconds(10);
    // Microseconds on purpose: DATETIME(6) must keep them through the interval arithmetic.
    private static final Instant T = Instant.parse("2030-01-02T03:04:05.123456Z");

    private static HikariDataSource dataSource;
    private static JdbcClient jdbc;
    private static Sessions sessions;
    private static DebounceTimers timers;

    @BeforeAll
    static void migrate() {
        dataSource = Databases.migrated("timers");
        jdbc = JdbcClient.create(dataSource);
        sessions = new Sessions(jdbc);
        timers = TestTimers.fixed(jdbc, new DebounceTiming(WINDOW, MAXWAIT));
    }

    @AfterAll
    static void close() {
        dataSource.close();
    }

    private static long unanswered(long version) {
        return sessions.insert(version, 0, 0, T, T, null, null);
    }

    private static MessageAccepted event(long session, long version, Duration sinceT) {
        return new MessageAccepted(session, version, T.plus(sinceT), T);
    }

    @Test
    void first_message_arms_fire_at_accepted_plus_window_and_deadline_at_oldest_plus_maxwait() {
        long s = unanswered(1);
        Instant before = sessions.dbNow();

        assertThat(timers.arm(event(s, 1, Duration.ZERO))).isTrue();

        Sessions.Timer timer = sessions.timer(s).orElseThrow();
        assertThat(timer.fireAt()).isEqualTo(T.plus(WINDOW));
        assertThat(timer.deadlineAt()).isEqualTo(T.plus(MAXWAIT));
        assertThat(timer.armedVersion()).isEqualTo(1);
        assertThat(timer.armedBy()).isEqualTo("message");
        assertThat(timer.armedAt()).isBetween(before, sessions.dbNow());
    }

    @Test
    void database_clock_round_trips_as_utc_whatever_the_session_time_zone() {
        String zone = jdbc.sql("SELECT @@session.time_zone").query(String.class).single();
        assertThat(zone).isEqualTo("+05:00");
        // UTC_TIMESTAMP(6) read through DbTime is the same instant as the JVM's clock, give or take scheduling.
        assertThat(Duration.between(Instant.now(), sessions.dbNow()).abs()).isLessThan(Duration.ofSeconds(5));
    }

    @Test
    void later_message_pushes_fire_at_out_but_never_past_the_deadline() {
        long s = unanswered(3);
        timers.arm(event(s, 1, Duration.ZERO));

        assertThat(timers.arm(event(s, 2, Duration.ofSeconds(3)))).isTrue();
        assertThat(sessions.timer(s).orElseThrow().fireAt()).isEqualTo(T.plus(Duration.ofMillis(4500)));

        assertThat(timers.arm(event(s, 3, Duration.ofMillis(9500)))).isTrue();
        Sessions.Timer timer = sessions.timer(s).orElseThrow();
        assertThat(timer.fireAt()).isEqualTo(T.plus(MAXWAIT));
        assertThat(timer.deadlineAt()).isEqualTo(T.plus(MAXWAIT));
        assertThat(timer.armedVersion()).isEqualTo(3);
    }

    @Test
    void redelivered_and_reordered_events_leave_the_same_row() {
        long inOrder = unanswered(3);
        long shuffled = unanswered(3);
        List<Long> versions = List.of(1L, 2L, 3L);
        for (long v : versions) {
            timers.arm(event(inOrder, v, Duration.ofMillis(400 * v)));
        }
        for (long v : List.of(3L, 1L, 3L, 2L, 1L)) {
            timers.arm(event(shuffled, v, Duration.ofMillis(400 * v)));
        }

        Sessions.Timer a = sessions.timer(inOrder).orElseThrow();
        Sessions.Timer b = sessions.timer(shuffled).orElseThrow();
        assertThat(b.fireAt())
                .isEqualTo(a.fireAt())
                .isEqualTo(T.plus(Duration.ofMillis(1200)).plus(WINDOW));
        assertThat(b.deadlineAt()).isEqualTo(a.deadlineAt());
        assertThat(b.armedVersion()).isEqualTo(a.armedVersion()).isEqualTo(3);
    }

    @Test
    void event_for_an_answered_version_arms_nothing() {
        long s = sessions.insert(5, 5, 0, null, T, null, null);

        assertThat(timers.arm(event(s, 5, Duration.ZERO))).isFalse();
        assertThat(timers.arm(event(s, 4, Duration.ZERO))).isFalse();
        assertThat(sessions.timer(s)).isEmpty();

        assertThat(timers.arm(event(s, 6, Duration.ZERO))).isTrue();
        assertThat(sessions.timer(s).orElseThrow().armedVersion()).isEqualTo(6);
    }

    @Test
    void event_for_an_unknown_session_arms_nothing() {
        assertThat(timers.arm(event(987_654_321L, 1, Duration.ZERO))).isFalse();
        assertThat(sessions.timer(987_654_321L)).isEmpty();
    }

    @Test
    void the_earlier_deadline_wins_when_events_arrive_out_of_order() {
        long s = unanswered(2);
        Instant late = T.plusMillis(9500);
        timers.arm(new MessageAccepted(s, 2, late, late));
        assertThat(sessions.timer(s).orElseThrow().fireAt()).isEqualTo(late.plus(WINDOW));

        timers.arm(new MessageAccepted(s, 1, T, T));

        // The new deadline applies in the same statement: fire_at is clamped to it, not to the stored one.
        Sessions.Timer timer = sessions.timer(s).orElseThrow();
        assertThat(timer.deadlineAt()).isEqualTo(T.plus(MAXWAIT));
        assertThat(timer.fireAt()).isEqualTo(T.plus(MAXWAIT));
        assertThat(timer.armedVersion()).isEqualTo(2);
    }

    @Test
    void a_message_never_delays_a_timer_the_sweeper_armed() {
        long s = unanswered(1);
        jdbc.sql("""
                        INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at)
                        VALUES (:id, :t, :t, 1, 'sweeper', :t)
                        """).param("id", s).param("t", DbTime.utc(T)).update();

        timers.arm(event(s, 2, Duration.ofSeconds(1)));

        Sessions.Timer timer = sessions.timer(s).orElseThrow();
        assertThat(timer.fireAt()).isEqualTo(T);
        assertThat(timer.armedBy()).isEqualTo("sweeper");
        assertThat(timer.armedVersion()).isEqualTo(2);
    }
}
