package dev.settle.boot;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.settle.testsupport.SharedInfra;
import dev.settle.testsupport.SqlTrace;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.JdbcTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.time.Duration;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Transactions framed by START TRANSACTION … COMMIT on one pooled connection (a pool of one, so every test also checks
 * the state the connection went back in): what is sent, what commits, what rolls back, and that a JdbcTemplate on the
 * pool joins the transaction.
 */
class StartTransactionDataSourceTest {
    private static String url;
    private static HikariDataSource pool;
    private static JdbcTemplate jdbc;
    private static TransactionTemplate tx;

    @BeforeAll
    static void start() {
        url = SharedInfra.newDatabase("stx");
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(SqlTrace.url(url, "stx"));
        config.setUsername("root");
        config.setMaximumPoolSize(1);
        config.addDataSourceProperty("useLocalSessionState", "true");
        pool = new HikariDataSource(config);
        jdbc = new JdbcTemplate(pool);
        jdbc.execute("CREATE TABLE t (id INT PRIMARY KEY) ENGINE=InnoDB");
        tx = new TransactionTemplate(new JdbcTransactionManager(new StartTransactionDataSource(pool)));
    }

    @AfterAll
    static void stop() {
        pool.close();
    }

    @BeforeEach
    void empty() {
        jdbc.update("DELETE FROM t");
    }

    @AfterEach
    void stopTracing() {
        SqlTrace.stop();
    }

    @Test
    void a_transaction_costs_start_transaction_and_commit_and_commits_every_write() {
        SqlTrace.start();
        tx.executeWithoutResult(s -> {
            jdbc.update("INSERT INTO t VALUES (1)");
            jdbc.update("INSERT INTO t VALUES (2)");
        });
        List<String> sent = sent();

        assertThat(sent)
                .containsExactly("START TRANSACTION", "INSERT INTO t VALUES (1)", "INSERT INTO t VALUES (2)", "COMMIT");
        assertThat(committedIds()).containsExactly(1, 2);
    }

    @Test
    void a_transaction_that_runs_no_statement_sends_nothing() {
        SqlTrace.start();
        tx.executeWithoutResult(s -> {});

        assertThat(sent()).isEmpty();
    }

    @Test
    void a_failed_transaction_rolls_back_every_write_and_the_connection_returns_in_autocommit_mode() {
        SqlTrace.start();
        assertThatThrownBy(() -> tx.executeWithoutResult(s -> {
                    jdbc.update("INSERT INTO t VALUES (1)");
                    jdbc.update("INSERT INTO t VALUES (1)"); // duplicate key
                }))
                .hasMessageContaining("Duplicate");
        jdbc.update("INSERT INTO t VALUES (3)"); // the same pooled connection, outside a transaction

        assertThat(sent())
                .containsExactly(
                        "START TRANSACTION",
                        "INSERT INTO t VALUES (1)",
                        "INSERT INTO t VALUES (1)",
                        "ROLLBACK",
                        "INSERT INTO t VALUES (3)");
        assertThat(committedIds()).containsExactly(3); // seen from another session: 3 committed on its own
    }

    @Test
    void a_rollback_only_transaction_rolls_back() {
        tx.executeWithoutResult(s -> {
            jdbc.update("INSERT INTO t VALUES (1)");
            s.setRollbackOnly();
        });

        assertThat(committedIds()).isEmpty();
    }

    @Test
    void a_connection_closed_in_an_open_transaction_rolls_it_back() throws Exception {
        StartTransactionDataSource view = new StartTransactionDataSource(pool);
        try (Connection c = view.getConnection()) {
            c.setAutoCommit(false);
            assertThat(c.getAutoCommit()).isFalse();
            c.createStatement().executeUpdate("INSERT INTO t VALUES (1)");
        }
        try (Connection c = view.getConnection()) { // the same physical connection
            assertThat(c.getAutoCommit()).isTrue();
            c.createStatement().executeUpdate("INSERT INTO t VALUES (2)");
        }

        assertThat(committedIds()).containsExactly(2);
    }

    @Test
    void after_a_commit_the_next_statement_begins_a_new_transaction() throws Exception {
        StartTransactionDataSource view = new StartTransactionDataSource(pool);
        try (Connection c = view.getConnection()) {
            c.setAutoCommit(false);
            c.createStatement().executeUpdate("INSERT INTO t VALUES (1)");
            c.commit();
            c.createStatement().executeUpdate("INSERT INTO t VALUES (2)");
            c.rollback();
            c.setAutoCommit(true);
        }

        assertThat(committedIds()).containsExactly(1);
    }

    /**
     * A transaction open longer than the threshold is reported once, with its statements at their offsets; a short
     * one on the same view is not. The pause between the statements stands for a thread that stalls with its locks
     * held.
     */
    @Test
    void a_transaction_open_longer_than_the_threshold_is_reported_with_its_statements() {
        List<String> reports = new java.util.concurrent.CopyOnWriteArrayList<>();
        TransactionTemplate watched = new TransactionTemplate(new JdbcTransactionManager(
                new StartTransactionDataSource(pool, new SlowTransactions(Duration.ofMillis(500), reports::add))));

        watched.executeWithoutResult(s -> jdbc.update("INSERT INTO t VALUES (1)"));
        assertThat(reports).isEmpty();

        watched.executeWithoutResult(s -> {
            jdbc.update("INSERT INTO t VALUES (?)", 2);
            pause(Duration.ofMillis(600));
            jdbc.update("INSERT   INTO t\n VALUES (?)", 3);
        });

        assertThat(reports).hasSize(1);
        String report = reports.getFirst();
        assertThat(report)
                .startsWith("transaction open ")
                .contains("ms until its COMMIT on thread "
                        + Thread.currentThread().getName() + ": +0.0 START TRANSACTION | +")
                .contains(" INSERT INTO t VALUES (?) | +")
                .endsWith(" COMMIT");
        List<Double> offsets = java.util.regex.Pattern.compile("\\| \\+([0-9.]+) INSERT INTO t VALUES \\(\\?\\)")
                .matcher(report)
                .results()
                .map(m -> Double.parseDouble(m.group(1)))
                .toList();
        assertThat(offsets).hasSize(2);
        assertThat(offsets.get(1) - offsets.get(0)).isGreaterThanOrEqualTo(600.0);
        assertThat(committedIds()).containsExactly(1, 2, 3);
    }

    private static void pause(Duration d) {
        try {
            Thread.sleep(d);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private static List<String> sent() {
        return SqlTrace.snapshot().stream()
                .filter(st -> st.app().equals("stx"))
                .map(SqlTrace.Statement::sql)
                .toList();
    }

    /** The ids another session sees committed. */
    private static List<Integer> committedIds() {
        try (Connection other = DriverManager.getConnection(url, "root", "");
                ResultSet rs = other.createStatement().executeQuery("SELECT id FROM t ORDER BY id")) {
            List<Integer> ids = new java.util.ArrayList<>();
            while (rs.next()) {
                ids.add(rs.getInt(1));
            }
            return ids;
        } catch (java.sql.SQLException e) {
            throw new IllegalStateException(e);
        }
    }
}
