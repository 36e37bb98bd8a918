package dev.settle.boot;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import java.time.LocalDateTime;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Settle's Connector/J defaults prepare each statement on the server once per connection and execute it in the binary
 * protocol; a server that refuses to prepare more ({@code max_prepared_stmt_count}) costs CPU, never a failure: the
 * driver runs that statement as a client-side prepared statement. Times bound as text (how {@code DbTime} binds them)
 * compare and read back to the microsecond either way.
 */
class ServerPreparedStatementsTest {
    private static final String PREFIX = "spring.datasource.hikari.data-source-properties.";
    private static final String EARLIER = "2026-12-04 17:00:00.123455";
    private static final String AT = "2026-12-04 17:00:00.123456";

    private static String url;

    @BeforeAll
    static void start() {
        url = SharedInfra.newDatabase("sps");
        try (HikariDataSource pool = pool()) {
            JdbcTemplate jdbc = new JdbcTemplate(pool);
            jdbc.execute("CREATE TABLE t (id INT PRIMARY KEY, at DATETIME(6) NOT NULL) ENGINE=InnoDB");
            jdbc.update("INSERT INTO t VALUES (1, ?)", AT);
        }
    }

    @Test
    void a_statement_is_prepared_on_the_server_once_per_connection_and_executed_in_the_binary_protocol() {
        try (HikariDataSource pool = pool()) {
            JdbcTemplate jdbc = new JdbcTemplate(pool);
            long prepared = status(jdbc, "Com_stmt_prepare");
            long executed = status(jdbc, "Com_stmt_execute");

            for (int i = 0; i < 5; i++) {
                assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM t WHERE at > ?", Integer.class, EARLIER))
                        .isEqualTo(1);
            }

            assertThat(status(jdbc, "Com_stmt_prepare") - prepared).isEqualTo(1);
            assertThat(status(jdbc, "Com_stmt_execute") - executed).isEqualTo(5);
            assertTimes(jdbc);
        }
    }

    @Test
    void a_server_that_prepares_no_more_statements_runs_them_client_side() {
        long max = maxPrepared();
        setMaxPrepared(0);
        try (HikariDataSource pool = pool()) {
            JdbcTemplate jdbc = new JdbcTemplate(pool);

            assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM t WHERE at > ?", Integer.class, EARLIER))
                    .isEqualTo(1);
            assertTimes(jdbc);
            assertThat(jdbc.update("UPDATE t SET at = ? WHERE id = ?", AT, 1)).isEqualTo(1);

            assertThat(status(jdbc, "Com_stmt_execute")).isZero();
        } finally {
            setMaxPrepared(max);
        }
    }

    /** A DATETIME(6) compared with and read back as the text DbTime binds, to the microsecond. */
    private static void assertTimes(JdbcTemplate jdbc) {
        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM t WHERE at > ?", Integer.class, AT))
                .isZero();
        assertThat(jdbc.queryForObject("SELECT COUNT(*) FROM t WHERE at = ?", Integer.class, AT))
                .isEqualTo(1);
        assertThat(jdbc.queryForObject("SELECT at FROM t WHERE id = ?", LocalDateTime.class, 1))
                .isEqualTo(LocalDateTime.parse(AT.replace(' ', 'T')));
    }

    /** A pool with Settle's Connector/J defaults, the way every application's pool gets them. */
    private static HikariDataSource pool() {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername("root");
        config.setMaximumPoolSize(1);
        for (Map.Entry<String, Object> e : SettleDefaults.properties().entrySet()) {
            if (e.getKey().startsWith(PREFIX)) {
                config.addDataSourceProperty(e.getKey().substring(PREFIX.length()), e.getValue());
            }
        }
        return new HikariDataSource(config);
    }

    /** A session status counter, read by a plain statement (not prepared, so not counted by the counters read). */
    private static long status(JdbcTemplate jdbc, String name) {
        return jdbc.query("SHOW SESSION STATUS LIKE '" + name + "'", rs -> rs.next() ? rs.getLong(2) : -1L);
    }

    private static long maxPrepared() {
        try (HikariDataSource pool = plainPool()) {
            return new JdbcTemplate(pool).queryForObject("SELECT @@GLOBAL.max_prepared_stmt_count", Long.class);
        }
    }

    private static void setMaxPrepared(long count) {
        try (HikariDataSource pool = plainPool()) {
            new JdbcTemplate(pool).execute("SET GLOBAL max_prepared_stmt_count = " + count);
        }
    }

    private static HikariDataSource plainPool() {
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername("root");
        config.setMaximumPoolSize(1);
        return new HikariDataSource(config);
    }
}
