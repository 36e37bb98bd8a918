package dev.settle.schema;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.Arrays;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Each rule of {@link SessionRules} run on a real database, at its boundaries. The session's clock is frozen
 * ({@code SET timestamp}), so "expiring exactly now" is exact.
 */
class SessionRulesTest {
    /** The frozen database time: UTC_TIMESTAMP(6) of every statement. */
    private static final Instant NOW = Instant.parse("2030-01-01T12:00:00.500000Z");

    private static final Duration MICRO = Duration.of(1, ChronoUnit.MICROS);

    private static HikariDataSource dataSource;
    private static JdbcTemplate jdbc;

    @BeforeAll
    static void open() {
        dataSource = Store.migrated("rules");
        jdbc = new JdbcTemplate(dataSource);
        jdbc.update(
                "INSERT INTO tenant (id, name, default_policy, created_at) VALUES ('enq', 'enq', 'enqueue', UTC_TIMESTAMP(6))");
    }

    @AfterAll
    static void close() {
        jdbc.execute("SET timestamp = DEFAULT");
        dataSource.close();
    }

    @BeforeEach
    void freezeTheClock() {
        jdbc.execute("SET timestamp = " + NOW.getEpochSecond() + "." + String.format("%06d", NOW.getNano() / 1000));
        assertThat(jdbc.queryForObject("SELECT UTC_TIMESTAMP(6)", LocalDateTime.class))
                .isEqualTo(LocalDateTime.ofInstant(NOW, ZoneOffset.UTC));
    }

    // ---- the lease ---------------------------------------------------------------------------------------------

    @Test
    void no_lease_is_free_and_nobody_s() {
        long s = leased(null, null);
        assertThat(lease(s, "a")).isEqualTo(new Lease(false, true, false, false));
    }

    @Test
    void a_lease_expiring_after_now_is_live_and_only_its_holders() {
        long s = leased("a", NOW.plus(MICRO));
        assertThat(lease(s, "a")).isEqualTo(new Lease(true, false, false, true));
        assertThat(lease(s, "b").ours()).isFalse();
    }

    @Test
    void a_lease_expiring_exactly_now_has_expired_so_its_holder_is_fenced_and_a_claimer_may_take_it() {
        long s = leased("a", NOW);
        assertThat(lease(s, "a")).isEqualTo(new Lease(false, true, true, false));
    }

    @Test
    void a_lease_that_expired_before_now_is_free_and_expired() {
        long s = leased("a", NOW.minus(MICRO));
        assertThat(lease(s, "a")).isEqualTo(new Lease(false, true, true, false));
    }

    @Test
    void at_every_instant_exactly_one_of_the_holder_and_a_claimer_may_write() {
        for (Instant expires :
                new Instant[] {NOW.minusSeconds(1), NOW.minus(MICRO), NOW, NOW.plus(MICRO), NOW.plusSeconds(1)}) {
            Lease l = lease(leased("a", expires), "a");
            assertThat(l.ours() ^ l.free()).as("expires " + expires).isTrue();
            assertThat(l.live()).isEqualTo(!l.free());
        }
    }

    // ---- work --------------------------------------------------------------------------------------------------

    @Test
    void has_work_while_a_version_is_unanswered_and_not_failed_at() {
        assertThat(work(3, 2, 0)).isEqualTo(new Work(true, true, false));
        assertThat(work(3, 2, 2)).isEqualTo(new Work(true, true, false));
        // version == replied_version: answered
        assertThat(work(3, 3, 0)).isEqualTo(new Work(false, false, false));
        assertThat(work(0, 0, 0)).isEqualTo(new Work(false, false, false));
        // version == failed_version: failed at this version, waits for a new message or a retry
        assertThat(work(3, 2, 3)).isEqualTo(new Work(true, false, true));
        // failed at an answered version: nothing to do, nothing failed
        assertThat(work(3, 3, 3)).isEqualTo(new Work(false, false, false));
    }

    // ---- the double-texting policy -----------------------------------------------------------------------------

    @Test
    void the_policy_is_the_session_s_else_its_tenant_s_else_the_deployment_s() {
        assertThat(policy(withPolicy("default", null), "merge")).isEqualTo("merge");
        assertThat(policy(withPolicy("default", "reject"), "merge")).isEqualTo("reject");
        assertThat(policy(withPolicy("enq", null), "merge")).isEqualTo("enqueue");
        assertThat(policy(withPolicy("enq", "reject"), "merge")).isEqualTo("reject");
        // a tenant that has no row: the deployment's
        assertThat(policy(withPolicy("gone", null), "reject")).isEqualTo("reject");
    }

    // ---- the debounce timer ------------------------------------------------------------------------------------

    @Test
    void the_timer_fires_a_window_after_the_last_message_never_past_max_wait_after_the_oldest() {
        DebounceTiming timing = new DebounceTiming(Duration.ofMillis(1500), Duration.ofSeconds(10));
        // a quiet burst: the window decides
        assertThat(fireAt(NOW, NOW.minusSeconds(5), timing)).isEqualTo(NOW.plusMillis(1500));
        // a long burst: the deadline decides
        assertThat(fireAt(NOW, NOW.minusSeconds(9), timing)).isEqualTo(NOW.plusSeconds(1));
        // both equal: that instant
        assertThat(fireAt(NOW, NOW.minusMillis(8500), timing)).isEqualTo(NOW.plusMillis(1500));
        // microseconds survive
        assertThat(fireAt(NOW.plus(MICRO), NOW.minusSeconds(1), timing))
                .isEqualTo(NOW.plusMillis(1500).plus(MICRO));
        assertThat(jdbc.queryForObject(
                        "SELECT " + SessionRules.timerDeadline("CAST(? AS DATETIME(6))", "?"),
                        LocalDateTime.class,
                        DbTime.utc(NOW),
                        timing.maxwaitMicros()))
                .isEqualTo(LocalDateTime.ofInstant(NOW.plusSeconds(10), ZoneOffset.UTC));
    }

    @Test
    void the_timer_rule_reads_a_session_row_as_well() {
        DebounceTiming timing = new DebounceTiming(Duration.ofSeconds(2), Duration.ofSeconds(3));
        long s = jdbc.queryForObject("SELECT COALESCE(MAX(id), 0) + 1 FROM chat_session", Long.class);
        jdbc.update("""
                INSERT INTO chat_session (id, tenant_id, external_id, version, oldest_unanswered_at, last_message_at, created_at)
                VALUES (?, 'default', ?, 2, ?, ?, UTC_TIMESTAMP(6))""", s, "timer-" + s, DbTime.utc(NOW.minusSeconds(2)), DbTime.utc(NOW));
        LocalDateTime fire = jdbc.queryForObject(
                "SELECT "
                        + SessionRules.timerFireAt("s.last_message_at", "s.oldest_unanswered_at", "?", "?")
                        + " FROM chat_session s WHERE s.id = ?",
                LocalDateTime.class,
                timing.windowMicros(),
                timing.maxwaitMicros(),
                s);
        assertThat(fire).isEqualTo(LocalDateTime.ofInstant(NOW.plusSeconds(1), ZoneOffset.UTC));
    }

    @Test
    void the_timing_must_be_positive() {
        for (Duration bad : Arrays.asList(Duration.ZERO, Duration.ofMillis(-1), null)) {
            org.assertj.core.api.Assertions.assertThatIllegalArgumentException()
                    .isThrownBy(() -> new DebounceTiming(bad, Duration.ofSeconds(10)))
                    .withMessageContaining("settle.debounce.window");
            org.assertj.core.api.Assertions.assertThatIllegalArgumentException()
                    .isThrownBy(() -> new DebounceTiming(Duration.ofSeconds(1), bad))
                    .withMessageContaining("settle.debounce.maxwait");
        }
        assertThat(new DebounceTiming(Duration.ofMillis(1500), Duration.ofSeconds(10)).windowMicros())
                .isEqualTo(1_500_000);
    }

    // ---- helpers -----------------------------------------------------------------------------------------------

    record Lease(boolean live, boolean free, boolean expired, boolean ours) {}

    record Work(boolean unanswered, boolean hasWork, boolean failedAtVersion) {}

    private static long nextId() {
        return jdbc.queryForObject("SELECT COALESCE(MAX(id), 0) + 1 FROM chat_session", Long.class);
    }

    private static long leased(String token, Instant expires) {
        long id = nextId();
        jdbc.update("""
                INSERT INTO chat_session (id, tenant_id, external_id, lease_token, lease_expires_at, created_at)
                VALUES (?, 'default', ?, ?, ?, UTC_TIMESTAMP(6))""", id, "lease-" + id, token, DbTime.utc(expires));
        return id;
    }

    private static long withPolicy(String tenant, String policy) {
        long id = nextId();
        jdbc.update("""
                INSERT INTO chat_session (id, tenant_id, external_id, policy, created_at)
                VALUES (?, ?, ?, ?, UTC_TIMESTAMP(6))""", id, tenant, "policy-" + id, policy);
        return id;
    }

    /** A rule's truth on one row: a NULL result (unknown) counts as false, as it does in a WHERE clause. */
    private static boolean holds(String rule, long session, Object... before) {
        Object[] args = Arrays.copyOf(before, before.length + 1);
        args[before.length] = session;
        Boolean value =
                jdbc.queryForObject("SELECT " + rule + " FROM chat_session s WHERE s.id = ?", Boolean.class, args);
        Long where = jdbc.queryForObject(
                "SELECT COUNT(*) FROM chat_session s WHERE " + rule + " AND s.id = ?", Long.class, args);
        assertThat(where == 1)
                .as("%s in a WHERE clause agrees with its value %s", rule, value)
                .isEqualTo(Boolean.TRUE.equals(value));
        return Boolean.TRUE.equals(value);
    }

    private static Lease lease(long session, String token) {
        return new Lease(
                holds(SessionRules.LEASE_LIVE, session),
                holds(SessionRules.LEASE_FREE, session),
                holds(SessionRules.LEASE_EXPIRED, session),
                holds(SessionRules.LEASE_OURS, session, token));
    }

    private static Work work(long version, long replied, long failed) {
        long id = nextId();
        jdbc.update("""
                INSERT INTO chat_session (id, tenant_id, external_id, version, replied_version, failed_version, created_at)
                VALUES (?, 'default', ?, ?, ?, ?, UTC_TIMESTAMP(6))""", id, "work-" + id, version, replied, failed);
        return new Work(
                holds(SessionRules.UNANSWERED, id),
                holds(SessionRules.HAS_WORK, id),
                holds(SessionRules.FAILED_AT_VERSION, id));
    }

    private static String policy(long session, String deploymentDefault) {
        return jdbc.queryForObject(
                "SELECT " + SessionRules.EFFECTIVE_POLICY + " FROM chat_session s WHERE s.id = ?",
                String.class,
                deploymentDefault,
                session);
    }

    private static Instant fireAt(Instant last, Instant oldest, DebounceTiming timing) {
        LocalDateTime at = jdbc.queryForObject(
                "SELECT " + SessionRules.timerFireAt("CAST(? AS DATETIME(6))", "CAST(? AS DATETIME(6))", "?", "?"),
                LocalDateTime.class,
                DbTime.utc(last),
                timing.windowMicros(),
                DbTime.utc(oldest),
                timing.maxwaitMicros());
        return at.toInstant(ZoneOffset.UTC);
    }
}
