package dev.settle.debounce;

import com.zaxxer.hikari.HikariDataSource;
import dev.settle.contracts.MessageAccepted;
import dev.settle.schema.DbTime;
import dev.settle.schema.DebounceTiming;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

/**
 * The adaptive window through the arming statements, on a real MariaDB: which fire_at each message of a burst gets,
 * what {@code session_pacing} and {@code tenant_pacing} keep. Bursts are played as ingest and the agent would leave
 * the session row: the messages of a burst are unanswered, then the burst is answered and its timer fired.
 */
class AdaptiveWindowTest {
    static final Duration BASE = Duration.ofMillis(1500);
    static final DebounceTiming TIMING = new DebounceTiming(BASE, Duration.ofSeconds(10));
    static final Instant T = Instant.parse("2030-01-02T03:04:05.123456Z");

    private static HikariDataSource dataSource;
    private static JdbcClient jdbc;
    private static Sessions sessions;

    @BeforeAll
    static void migrate() {
        dataSource = Databases.migrated("adaptive");
        jdbc = JdbcClient.create(dataSource);
        sessions = new Sessions(jdbc);
    }

    @AfterAll
    static void close() {
        dataSource.close();
    }

    /** A session of {@code tenant}, and the clock of its messages. */
    final class Session {
        final long id;
        final DebounceTimers timers;
        Instant now;
        long version;
        /** The window cause of the timer after each message of the last burst. */
        final List<String> causes = new ArrayList<>();

        Session(String tenant, DebounceTimers timers, Instant start) {
            this.id = sessions.create();
            this.timers = timers;
            this.now = start;
            jdbc.sql("UPDATE chat_session SET tenant_id = :t WHERE id = :id")
                    .param("t", tenant)
                    .param("id", id)
                    .update();
        }

        /**
         * One burst, a minute after the last: its messages {@code pausesMillis} apart. Returns, for each message,
         * the timer's fire_at minus the message's time (the window in effect after it).
         */
        List<Duration> burst(long... pausesMillis) {
            now = now.plus(Duration.ofMinutes(1));
            Instant oldest = now;
            causes.clear();
            List<Duration> windows = new ArrayList<>();
            windows.add(message(oldest));
            for (long pause : pausesMillis) {
                now = now.plusMillis(pause);
                windows.add(message(oldest));
            }
            // answered, and its timer fired
            sessions.markAnswered(id);
            jdbc.sql("DELETE FROM debounce_timer WHERE session_id = :id")
                    .param("id", id)
                    .update();
            return windows;
        }

        private Duration message(Instant oldest) {
            version++;
            jdbc.sql("""
                            UPDATE chat_session SET version = :v, last_message_at = :now,
                                   oldest_unanswered_at = :oldest WHERE id = :id""")
                    .param("v", version)
                    .param("now", DbTime.utc(now))
                    .param("oldest", DbTime.utc(oldest))
                    .param("id", id)
                    .update();
            sessions.message(id, version, now);
            assertThat(timers.arm(new MessageAccepted(id, version, now, oldest)))
                    .isTrue();
            causes.add(jdbc.sql("SELECT window_cause FROM debounce_timer WHERE session_id = :id")
                    .param("id", id)
                    .query(String.class)
                    .single());
            return Duration.between(now, sessions.timer(id).orElseThrow().fireAt());
        }

        /** The window now in effect and its cause, as the session view reads them. */
        List<Object> pacing() {
            return jdbc.sql("SELECT window_micros, window_cause FROM session_pacing WHERE session_id = :id")
                    .param("id", id)
                    .query((rs, n) -> List.<Object>of(rs.getLong(1), rs.getString(2)))
                    .single();
        }
    }

    static String tenant() {
        return "t-" + UUID.randomUUID();
    }

    static Duration ms(long millis) {
        return Duration.ofMillis(millis);
    }

    @Test
    void single_message_bursts_fire_at_their_message_plus_the_base_window() {
        Session s = new Session(tenant(), TestTimers.adaptive(jdbc, TIMING), T);
        for (int b = 0; b < 8; b++) {
            assertThat(s.burst()).containsExactly(BASE);
            assertThat(s.causes).containsExactly("base");
        }
        assertThat(s.pacing()).containsExactly(BASE.toNanos() / 1000, "base");
    }

    @Test
    void only_a_change_is_written_so_a_first_message_and_a_settled_sessions_single_messages_write_nothing() {
        String tenant = tenant();
        Session s = new Session(tenant, TestTimers.adaptive(jdbc, TIMING), T);
        assertThat(s.burst()).containsExactly(BASE);
        assertThat(written(s)).as("a first message changes nothing").isEmpty();
        for (int b = 0; b < PacingRule.SAMPLES; b++) {
            assertThat(s.burst()).containsExactly(BASE);
        }
        List<Object> settled = written(s);
        assertThat(settled.getFirst()).isEqualTo(String.join(",", Collections.nCopies(PacingRule.SAMPLES, "0")));
        s.burst();
        s.burst();
        assertThat(written(s))
                .as("a ring of zeros and a zero sample: nothing written")
                .isEqualTo(settled);
        // the pause is still measured from the previous message, which the row no longer names
        assertThat(s.burst(2250)).containsExactly(BASE, BASE);
        assertThat((String) written(s).getFirst()).endsWith(",2250");
    }

    /** The session's ring and when its row and its tenant's ring were last written; empty when no row. */
    private static List<Object> written(Session s) {
        return jdbc.sql("""
                        SELECT p.samples, p.updated_at, tp.updated_at AS tenant_updated_at
                          FROM session_pacing p
                          JOIN chat_session c ON c.id = p.session_id
                          LEFT JOIN tenant_pacing tp ON tp.tenant_id = c.tenant_id
                         WHERE p.session_id = :id""")
                .param("id", s.id)
                .query((rs, n) ->
                        List.<Object>of(rs.getString(1), rs.getObject(2).toString(), String.valueOf(rs.getObject(3))))
                .optional()
                .orElse(List.of());
    }

    @Test
    void pauses_of_one_and_a_half_windows_are_learned_within_the_first_burst() {
        Session s = new Session(tenant(), TestTimers.adaptive(jdbc, TIMING), T);
        // 2250 ms pauses: the first outlasts the base window (a fire the next message interrupts); from then on
        // the window is 1.25 x the pause
        assertThat(s.burst(2250, 2250, 2250)).containsExactly(BASE, ms(2813), ms(2813), ms(2813));
        assertThat(s.causes).containsExactly("base", "learned", "learned", "learned");
        // the next burst starts with the learned window
        assertThat(s.burst(2250, 2250)).containsOnly(ms(2813));
        assertThat(s.causes).containsOnly("learned");
        assertThat(s.pacing()).containsExactly(2_813_000L, "learned");
    }

    @Test
    void a_fresh_session_of_a_tenant_whose_sessions_learned_starts_with_the_learned_window() {
        String tenant = tenant();
        DebounceTimers timers = TestTimers.adaptive(jdbc, TIMING);
        Session typist = new Session(tenant, timers, T);
        typist.burst(2000, 2000, 2000);

        Session fresh = new Session(tenant, timers, T.plusSeconds(3600));
        assertThat(fresh.burst(2000)).containsExactly(ms(2500), ms(2500));

        Session otherTenant = new Session(tenant(), timers, T.plusSeconds(3600));
        assertThat(otherTenant.burst()).containsExactly(BASE);
    }

    @Test
    void the_window_never_passes_maxwindow_and_longer_pauses_teach_nothing() {
        DebounceTimers timers =
                TestTimers.of(jdbc, TIMING, new PacingSettings(true, ms(2000)), new SimpleMeterRegistry());
        Session s = new Session(tenant(), timers, T);
        assertThat(s.burst(1900, 2100, 1900)).containsExactly(BASE, ms(2000), ms(2000), ms(2000));
        String samples = jdbc.sql("SELECT samples FROM session_pacing WHERE session_id = :id")
                .param("id", s.id)
                .query(String.class)
                .single();
        assertThat(samples).isEqualTo("1900,1900");
    }

    @Test
    void the_tenant_ring_keeps_the_last_16_samples_of_all_its_sessions() {
        String tenant = tenant();
        DebounceTimers timers = TestTimers.adaptive(jdbc, TIMING);
        Session a = new Session(tenant, timers, T);
        Session b = new Session(tenant, timers, T);
        a.burst(100, 200, 300, 400, 500, 600, 700, 800, 900);
        b.burst(1000, 1100, 1200, 1300, 1400, 1500, 1600, 1700, 1800);
        String ring = jdbc.sql("SELECT samples FROM tenant_pacing WHERE tenant_id = :t")
                .param("t", tenant)
                .query(String.class)
                .single();
        assertThat(ring).isEqualTo("300,400,500,600,700,800,900,1000,1100,1200,1300,1400,1500,1600,1700,1800");
    }

    @Test
    void with_adaptive_false_every_message_arms_the_base_window_and_nothing_is_learned() {
        Session s = new Session(tenant(), TestTimers.fixed(jdbc, TIMING), T);
        assertThat(s.burst(2250, 2250, 2250)).containsOnly(BASE);
        assertThat(s.burst(2250, 2250)).containsOnly(BASE);
        assertThat(s.causes).containsOnly("base");
        assertThat(jdbc.sql("SELECT COUNT(*) FROM session_pacing WHERE session_id = :id")
                        .param("id", s.id)
                        .query(Long.class)
                        .single())
                .isZero();
    }

    @Test
    void maxwindow_defaults_to_4s_within_window_and_maxwait_and_a_configured_one_outside_them_is_refused() {
        PacingSettings unset = new PacingSettings(true, null);
        assertThat(unset.maxwindow(TIMING)).isEqualTo(Duration.ofSeconds(4));
        assertThat(unset.maxwindow(new DebounceTiming(ms(300), ms(1500)))).isEqualTo(ms(1500));
        assertThat(unset.maxwindow(new DebounceTiming(Duration.ofSeconds(5), Duration.ofSeconds(10))))
                .isEqualTo(Duration.ofSeconds(5));
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new PacingSettings(true, ms(1000)).maxwindow(TIMING))
                .withMessage("settle.debounce.maxwindow (PT1S) must lie between settle.debounce.window (PT1.5S)"
                        + " and settle.debounce.maxwait (PT10S)");
        assertThatIllegalArgumentException()
                .isThrownBy(() -> new PacingSettings(true, Duration.ofSeconds(11)).maxwindow(TIMING));
    }
}
