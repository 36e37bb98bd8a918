package dev.settle.schema;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import java.time.Instant;
import java.time.LocalDateTime;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link DbTime} binds DATETIME(6) parameters as text with six fractional digits and reads them back without any
 * time-zone conversion: a value written through it matches an equality guard to the microsecond (the timer firer's
 * {@code fire_at = ?}), whatever the session's time zone (+05:00 here) and the server's reported version.
 */
class DbTimeBindingTest {
    private static final Instant AT = Instant.parse("2026-11-29T21:33:47.123456Z");

    private static HikariDataSource dataSource;
    private static JdbcTemplate jdbc;

    @BeforeAll
    static void open() {
        dataSource = Store.migrated("dbtime");
        jdbc = new JdbcTemplate(dataSource);
    }

    @AfterAll
    static void close() {
        dataSource.close();
    }

    @Test
    void binds_as_text_with_all_six_fractional_digits() {
        assertThat(DbTime.utc(AT)).isEqualTo("2026-11-29 21:33:47.123456");
        assertThat(DbTime.utc(Instant.parse("2026-11-29T21:33:47Z"))).isEqualTo("2026-11-29 21:33:47.000000");
        assertThat(DbTime.utc(Instant.parse("2026-11-29T21:33:47.000001Z"))).isEqualTo("2026-11-29 21:33:47.000001");
        assertThat(DbTime.text(LocalDateTime.parse("2026-11-29T21:33:47.1"))).isEqualTo("2026-11-29 21:33:47.100000");
        assertThat(DbTime.utc(null)).isNull();
        assertThat(DbTime.text(null)).isNull();
    }

    @Test
    void a_bound_time_is_stored_to_the_microsecond_and_read_back_as_the_same_instant() {
        long id = insertTimer(AT);
        Instant read = jdbc.queryForObject(
                "SELECT fire_at FROM debounce_timer WHERE session_id = ?",
                (rs, i) -> DbTime.instant(rs, "fire_at"),
                id);
        assertThat(read).isEqualTo(AT);
        assertThat(jdbc.queryForObject(
                        "SELECT CAST(fire_at AS CHAR) FROM debounce_timer WHERE session_id = ?", String.class, id))
                .isEqualTo("2026-11-29 21:33:47.123456");
    }

    @Test
    void an_equality_guard_on_a_bound_time_matches_the_stored_row_exactly() {
        long id = insertTimer(AT);
        assertThat(jdbc.queryForObject(
                        "SELECT COUNT(*) FROM debounce_timer WHERE session_id = ? AND fire_at = ?",
                        Long.class,
                        id,
                        DbTime.utc(AT)))
                .isEqualTo(1);
        assertThat(jdbc.queryForObject(
                        "SELECT COUNT(*) FROM debounce_timer WHERE session_id = ? AND fire_at = ?",
                        Long.class,
                        id,
                        DbTime.utc(AT.plusNanos(1000))))
                .isZero();
        // a value read back (UTC wall time) binds back to the same row
        LocalDateTime wall =
                jdbc.queryForObject("SELECT fire_at FROM debounce_timer WHERE session_id = ?", LocalDateTime.class, id);
        assertThat(jdbc.update(
                        "DELETE FROM debounce_timer WHERE session_id = ? AND fire_at = ?", id, DbTime.text(wall)))
                .isEqualTo(1);
    }

    @Test
    void a_null_time_reads_as_null() {
        long id = jdbc.queryForObject("SELECT COALESCE(MAX(id), 0) + 1 FROM chat_session", Long.class);
        jdbc.update(
                "INSERT INTO chat_session (id, external_id, created_at) VALUES (?, ?, UTC_TIMESTAMP(6))", id, "n" + id);
        Instant read = jdbc.queryForObject(
                "SELECT lease_expires_at FROM chat_session WHERE id = ?",
                (rs, i) -> DbTime.instant(rs, "lease_expires_at"),
                id);
        assertThat(read).isNull();
    }

    private static long nextTimer = 1;

    private static long insertTimer(Instant fireAt) {
        long id = nextTimer++;
        jdbc.update("""
                INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at)
                VALUES (?, ?, ?, 1, 'message', UTC_TIMESTAMP(6))""", id, DbTime.utc(fireAt), DbTime.utc(fireAt));
        return id;
    }
}
