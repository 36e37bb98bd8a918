package dev.settle.debounce;

import com.zaxxer.hikari.HikariDataSource;
import dev.settle.contracts.EventCodec;
import dev.settle.contracts.MessageAccepted;
import dev.settle.contracts.Topics;
import dev.settle.contracts.TypingSignal;
import dev.settle.schema.DbTime;
import dev.settle.schema.DebounceTiming;
import dev.settle.schema.SessionRules;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;

import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Optional;

import static org.assertj.core.api.Assertions.assertThat;

/** Typing signals against the arming statement, on a real MariaDB: exact rows, on fixed database times. */
class TypingHoldsTest {
    private static final Duration WINDOW = Duration.ofMillis(1500);
    private static final Duration MAXWAIT = Duration.ofSeconds(10);
    private static final Duration HOLD = Duration.ofSeconds(3);
    private static final Instant T = Instant.parse("2030-01-02T03:04:05.123456Z");

    private static HikariDataSource dataSource;
    private static JdbcClient jdbc;
    private static Sessions sessions;
    private static DebounceTimers timers;
    private static TypingHolds holds;

    /** The typing columns of a timer row and the cause it would fire with. */
    record Held(Instant fireAt, Instant windowFireAt, Instant heldUntil, Instant typingAt, String cause) {}

    @BeforeAll
    static void migrate() {
        dataSource = Databases.migrated("typing");
        jdbc = JdbcClient.create(dataSource);
        sessions = new Sessions(jdbc);
        timers = TestTimers.fixed(jdbc, new DebounceTiming(WINDOW, MAXWAIT));
        holds = holds(new SimpleMeterRegistry());
    }

    private static TypingHolds holds(MeterRegistry meters) {
        return new TypingHolds(jdbc, new DebounceSettings(Duration.ofMillis(20), 200, HOLD), meters);
    }

    @AfterAll
    static void close() {
        dataSource.close();
    }

    private static long unanswered(long version) {
        return sessions.insert(version, 0, 0, T, T, null, null);
    }

    private static void message(long session, long version, Duration sinceT) {
        assertThat(timers.arm(new MessageAccepted(session, version, T.plus(sinceT), T)))
                .isTrue();
    }

    private static boolean typing(long session, Duration sinceT) {
        return holds.hold(new TypingSignal(session, T.plus(sinceT)));
    }

    private static Optional<Held> held(long session) {
        return jdbc.sql("SELECT d.fire_at, d.window_fire_at, d.held_until, d.typing_at, " + SessionRules.TIMER_CAUSE
                        + " AS cause FROM debounce_timer d WHERE d.session_id = :id")
                .param("id", session)
                .query((rs, n) -> new Held(
                        DbTime.instant(rs, "fire_at"),
                        DbTime.instant(rs, "window_fire_at"),
                        DbTime.instant(rs, "held_until"),
                        DbTime.instant(rs, "typing_at"),
                        rs.getString("cause")))
                .optional();
    }

    private static Duration ms(long millis) {
        return Duration.ofMillis(millis);
    }

    @Test
    void a_signal_holds_the_armed_timer_until_hold_after_the_signal() {
        long s = unanswered(1);
        message(s, 1, Duration.ZERO);

        assertThat(typing(s, ms(1000))).isTrue();

        assertThat(held(s))
                .contains(new Held(T.plus(ms(4000)), T.plus(WINDOW), T.plus(ms(4000)), T.plus(ms(1000)), "typing"));
    }

    @Test
    void signals_that_keep_coming_keep_holding_and_reordered_ones_leave_the_same_row() {
        long inOrder = unanswered(1);
        long shuffled = unanswered(1);
        message(inOrder, 1, Duration.ZERO);
        message(shuffled, 1, Duration.ZERO);
        for (long at : List.of(500L, 1500L, 2500L)) {
            typing(inOrder, ms(at));
        }
        for (long at : List.of(2500L, 500L, 1500L, 2500L)) {
            typing(shuffled, ms(at));
        }

        Held expected = new Held(T.plus(ms(5500)), T.plus(WINDOW), T.plus(ms(5500)), T.plus(ms(2500)), "typing");
        assertThat(held(inOrder)).contains(expected);
        assertThat(held(shuffled)).contains(expected);
    }

    @Test
    void a_signal_never_holds_past_max_wait() {
        long s = unanswered(1);
        message(s, 1, Duration.ZERO);

        assertThat(typing(s, ms(8000))).isTrue();

        Held h = held(s).orElseThrow();
        assertThat(h.fireAt()).isEqualTo(T.plus(MAXWAIT));
        assertThat(h.heldUntil()).isEqualTo(T.plus(MAXWAIT));
        assertThat(h.cause()).isEqualTo("maxwait");
        Instant deadline = sessions.timer(s).orElseThrow().deadlineAt();
        assertThat(deadline).isEqualTo(T.plus(MAXWAIT));

        assertThat(typing(s, ms(9500)))
                .as("a timer due at its deadline is left alone")
                .isFalse();
        assertThat(typing(s, ms(20_000))).isFalse();
        assertThat(held(s).orElseThrow()).isEqualTo(h);
    }

    @Test
    void a_message_ends_the_hold_and_arms_its_window() {
        long s = unanswered(2);
        message(s, 1, Duration.ZERO);
        typing(s, ms(1000));

        message(s, 2, ms(2000));

        assertThat(held(s)).contains(new Held(T.plus(ms(3500)), T.plus(ms(3500)), null, null, "window"));
    }

    @Test
    void a_message_from_before_the_signal_keeps_the_hold() {
        long s = unanswered(2);
        message(s, 1, Duration.ZERO);
        typing(s, ms(2000));

        message(s, 2, ms(1000)); // committed before the signal, delivered after it

        assertThat(held(s))
                .contains(new Held(T.plus(ms(5000)), T.plus(ms(2500)), T.plus(ms(5000)), T.plus(ms(2000)), "typing"));
    }

    @Test
    void a_stale_signal_from_before_the_last_message_does_not_hold() {
        long s = unanswered(2);
        message(s, 1, Duration.ZERO);
        message(s, 2, ms(2000));
        Optional<Held> before = held(s);

        assertThat(typing(s, ms(1000))).isFalse();
        assertThat(typing(s, ms(2000)))
                .as("a signal at the message's own time is stale too")
                .isFalse();

        assertThat(held(s))
                .isEqualTo(before)
                .contains(new Held(T.plus(ms(3500)), T.plus(ms(3500)), null, null, "window"));
    }

    /**
     * The signal was read after the message committed, but reached the partition before the message's
     * MessageAccepted (queued later by the accepting request, or by another ingest instance): it holds once the
     * message arms the timer, as it would have in order.
     */
    @Test
    void a_signal_that_overtook_its_message_holds_once_the_message_arms() {
        long s = unanswered(1);
        long stale = unanswered(1);
        MeterRegistry meters = new SimpleMeterRegistry();
        MessageAcceptedListener listener = new MessageAcceptedListener(timers, holds(meters));

        listener.onMessage(record(new TypingSignal(s, T.plus(ms(500)))));
        listener.onMessage(record(new TypingSignal(stale, T.minus(ms(1)))));
        listener.onMessage(record(EventCodec.encode(new MessageAccepted(s, 1, T, T))));
        listener.onMessage(record(EventCodec.encode(new MessageAccepted(stale, 1, T, T))));

        assertThat(held(s))
                .contains(new Held(T.plus(ms(3500)), T.plus(WINDOW), T.plus(ms(3500)), T.plus(ms(500)), "typing"));
        assertThat(held(stale))
                .as("a signal from before the message is stale however it arrives")
                .contains(new Held(T.plus(WINDOW), null, null, null, "window"));
        for (String outcome : List.of("kept", "held", "stale", "full")) {
            assertThat(meters.counter(TypingHolds.EARLY_METRIC, "outcome", outcome)
                            .count())
                    .as(outcome)
                    .isEqualTo(outcome.equals("kept") ? 2 : outcome.equals("full") ? 0 : 1);
        }
    }

    private static ConsumerRecord<String, String> record(TypingSignal signal) {
        ConsumerRecord<String, String> r = record(EventCodec.encode(signal));
        r.headers().add(Topics.EVENT_TYPE, TypingSignal.TYPE.getBytes(StandardCharsets.UTF_8));
        return r;
    }

    private static ConsumerRecord<String, String> record(String value) {
        return new ConsumerRecord<>(Topics.MESSAGE_ACCEPTED, 0, 0, "key", value);
    }

    @Test
    void a_signal_on_a_session_with_no_timer_creates_nothing() {
        long answered = sessions.insert(3, 3, 0, null, T, null, null);
        long fired = unanswered(1);

        assertThat(typing(answered, ms(100))).isFalse();
        assertThat(typing(fired, ms(100))).isFalse();
        assertThat(typing(987_654_321L, ms(100))).isFalse();

        assertThat(sessions.timers(List.of(answered, fired, 987_654_321L))).isZero();
    }

    @Test
    void a_timer_the_sweeper_armed_stays_due_now() {
        long s = unanswered(1);
        jdbc.sql("""
                        INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at)
                        VALUES (:id, :t, :t, 1, 'sweeper', :t)
                        """).param("id", s).param("t", DbTime.utc(T)).update();

        assertThat(typing(s, ms(-500))).isFalse();

        assertThat(held(s)).contains(new Held(T, null, null, null, "sweeper"));
    }
}
