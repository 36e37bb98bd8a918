package dev.settle.debounce;

import com.zaxxer.hikari.HikariDataSource;
import dev.settle.contracts.MessageAccepted;
import dev.settle.schema.DebounceTiming;
import dev.settle.testsupport.Migrations;
import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.kafka.core.KafkaTemplate;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The debounce worker's SQL (timer arm/extend, fire with SKIP LOCKED, burst end, next due, stranded-session sweep), one
 * abstract suite run on every database the project supports: tiny subclasses per database only say how to reach it.
 * The schema is applied by the changelog, as the services do; connections run at +05:00 to show nothing depends on the
 * session time zone.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class DebounceContract {
    /** Long enough that no timer armed by a message becomes due during the suite. */
    static final DebounceTiming TIMING = new DebounceTiming(Duration.ofHours(1), Duration.ofHours(2));

    static final DebounceSettings SETTINGS = new DebounceSettings(Duration.ofMillis(20), 200, Duration.ofSeconds(3));

    HikariDataSource dataSource;
    JdbcClient jdbc;
    Sessions sessions;

    /** The database for this suite: JDBC URL, user, password. */
    abstract String[] database();

    /** Run on every new connection. */
    String connectionInit() {
        return "SET time_zone = '+05:00'";
    }

    @BeforeAll
    void migrate() {
        String[] db = database();
        dataSource = new HikariDataSource();
        dataSource.setJdbcUrl(db[0]);
        dataSource.setUsername(db[1]);
        dataSource.setPassword(db[2]);
        dataSource.setMaximumPoolSize(4);
        dataSource.setConnectionInitSql(connectionInit());
        dataSource.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
        Migrations.migrate(dataSource);
        jdbc = JdbcClient.create(dataSource);
        sessions = new Sessions(jdbc);
    }

    @AfterAll
    void close() {
        if (dataSource != null) {
            dataSource.close();
        }
    }

    @Test
    void adaptive_arming_keeps_the_sessions_pacing_and_appends_to_its_tenants_ring() {
        DebounceTimers timers = TestTimers.adaptive(jdbc, TIMING);
        long session = sessions.create();
        for (int i = 0; i < 3; i++) {
            assertThat(timers.arm(sessions.accept(session))).isTrue();
        }
        Map<String, Object> pacing = jdbc.sql(
                        "SELECT samples, window_micros, window_cause, burst_messages FROM session_pacing WHERE session_id = :id")
                .param("id", session)
                .query()
                .singleRow();
        assertThat(PacingRule.parse((String) pacing.get("samples"))).hasSize(2);
        assertThat(((Number) pacing.get("window_micros")).longValue()).isEqualTo(TIMING.windowMicros());
        assertThat(pacing.get("window_cause")).isEqualTo("base");
        assertThat(((Number) pacing.get("burst_messages")).intValue()).isEqualTo(3);
        String ring = jdbc.sql("SELECT samples FROM tenant_pacing WHERE tenant_id = 'test'")
                .query(String.class)
                .single();
        assertThat(ring).endsWith((String) pacing.get("samples"));
        assertThat(PacingRule.parse(ring).size()).isBetween(2, PacingRule.SAMPLES);
        assertThat(jdbc.sql("SELECT window_cause FROM debounce_timer WHERE session_id = :id")
                        .param("id", session)
                        .query(String.class)
                        .single())
                .isEqualTo("base");
    }

    @Test
    void arming_inserts_then_extends_the_window_never_past_the_deadline_and_skips_answered_versions() {
        DebounceTimers timers = TestTimers.fixed(jdbc, TIMING);
        long session = sessions.create();
        MessageAccepted first = sessions.accept(session);
        assertThat(timers.arm(first)).isTrue();
        Sessions.Timer armed = sessions.timer(session).orElseThrow();
        assertThat(armed.fireAt()).isEqualTo(first.acceptedAt().plus(TIMING.window()));
        assertThat(armed.deadlineAt()).isEqualTo(first.oldestUnansweredAt().plus(TIMING.maxwait()));
        assertThat(armed.armedVersion()).isEqualTo(1);

        MessageAccepted second = sessions.accept(session);
        assertThat(timers.arm(second)).isTrue();
        Sessions.Timer extended = sessions.timer(session).orElseThrow();
        assertThat(extended.fireAt()).isEqualTo(second.acceptedAt().plus(TIMING.window()));
        assertThat(extended.deadlineAt()).isEqualTo(armed.deadlineAt());
        assertThat(extended.armedVersion()).isEqualTo(2);

        // a late, older event changes nothing: fire_at never moves back, armed_version never down
        assertThat(timers.arm(first)).isTrue();
        assertThat(sessions.timer(session).orElseThrow()).isEqualTo(extended);

        // past the deadline the window is capped at it
        MessageAccepted late =
                new MessageAccepted(session, 3, armed.deadlineAt().plusSeconds(60), first.oldestUnansweredAt());
        timers.arm(late);
        assertThat(sessions.timer(session).orElseThrow().fireAt()).isEqualTo(armed.deadlineAt());

        long answered = sessions.create();
        MessageAccepted done = sessions.accept(answered);
        sessions.markAnswered(answered);
        assertThat(timers.arm(done)).isFalse();
        assertThat(sessions.timer(answered)).isEmpty();
    }

    @Test
    void the_firer_locks_due_timers_deletes_each_once_records_the_burst_end_and_knows_the_next_due() {
        long session = sessions.create();
        Instant now = sessions.dbNow();
        jdbc.sql("""
                        INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at)
                        VALUES (:id, :fire, :fire, 4, 'message', UTC_TIMESTAMP(6))
                        """)
                .param("id", session)
                .param("fire", dev.settle.schema.DbTime.utc(now.minusMillis(5)))
                .update();
        withFirer(firer -> {
            assertThat(firer.untilNextDue()).isEqualTo(Duration.ZERO);
            long due = jdbc.sql("SELECT COUNT(*) FROM debounce_timer WHERE fire_at <= UTC_TIMESTAMP(6)")
                    .query(Long.class)
                    .single();
            assertThat(firer.fireDue()).isEqualTo((int) due);
            assertThat(firer.fireDue()).isZero();
            assertThat(sessions.timer(session)).isEmpty();
            assertThat(jdbc.sql("SELECT end_version FROM session_burst WHERE session_id = :id")
                            .param("id", session)
                            .query(Long.class)
                            .list())
                    .containsExactly(4L);
            assertThat(firer.untilNextDue()).isPositive();
        });
    }

    @Test
    void a_fired_timer_records_its_burst_end_only_when_its_session_may_be_under_enqueue() {
        DebounceTimers timers = TestTimers.fixed(jdbc, TIMING);
        Map<String, Long> bySession = new java.util.LinkedHashMap<>();
        for (String policy : new String[] {"merge", "reject", "enqueue", null}) {
            long session = sessions.create();
            MessageAccepted accepted = sessions.accept(session);
            assertThat(timers.arm(new MessageAccepted(
                            session, accepted.version(), accepted.acceptedAt(), accepted.oldestUnansweredAt(), policy)))
                    .isTrue();
            bySession.put(String.valueOf(policy), session);
        }
        jdbc.sql("UPDATE debounce_timer SET fire_at = UTC_TIMESTAMP(6) - INTERVAL 5000 MICROSECOND"
                        + " WHERE session_id IN (:ids)")
                .param("ids", bySession.values())
                .update();

        withFirer(firer -> {
            assertThat(firer.fireDue()).isGreaterThanOrEqualTo(4);
            Map<String, java.util.List<Long>> ends = new java.util.LinkedHashMap<>();
            bySession.forEach((policy, session) -> ends.put(
                    policy,
                    jdbc.sql("SELECT end_version FROM session_burst WHERE session_id = :id")
                            .param("id", session)
                            .query(Long.class)
                            .list()));
            assertThat(ends)
                    .containsExactly(
                            Map.entry("merge", java.util.List.of()),
                            Map.entry("reject", java.util.List.of()),
                            Map.entry("enqueue", java.util.List.of(1L)),
                            Map.entry("null", java.util.List.of(1L))); // unknown: may be enqueue
        });
    }

    /** Runs {@code body} with a timer firer on this suite's database and the shared broker. */
    private void withFirer(java.util.function.Consumer<TimerFirer> body) {
        KafkaTemplate<String, String> kafka = KafkaEvents.template(SharedInfra.kafkaBootstrap(), 5000);
        try {
            body.accept(new TimerFirer(
                    jdbc,
                    new DataSourceTransactionManager(dataSource),
                    kafka,
                    SETTINGS,
                    new io.micrometer.core.instrument.simple.SimpleMeterRegistry()));
        } finally {
            kafka.destroy();
        }
    }

    @Test
    void the_sweeper_arms_a_due_timer_for_a_stranded_session_once_and_never_over_an_armed_one() {
        StrandedSessionSweeper sweeper = new StrandedSessionSweeper(
                jdbc, new SweeperSettings(Duration.ofHours(1), Duration.ofSeconds(5)), TimerWake.NONE);
        Instant old = sessions.dbNow().minusSeconds(60);
        long stranded = sessions.insert(3, 1, 0, old, old, null, null);
        long armed = sessions.insert(2, 0, 0, old, old, null, null);
        TestTimers.fixed(jdbc, TIMING).arm(new MessageAccepted(armed, 2, old, old));
        Sessions.Timer before = sessions.timer(armed).orElseThrow();

        assertThat(sweeper.sweep()).isEqualTo(1);
        assertThat(sessions.timer(stranded).orElseThrow().armedBy()).isEqualTo("sweeper");
        assertThat(sessions.timer(stranded).orElseThrow().armedVersion()).isEqualTo(3);
        assertThat(sessions.timer(armed).orElseThrow()).isEqualTo(before);
        assertThat(sweeper.sweep()).isZero();
    }
}
