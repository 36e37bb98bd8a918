package dev.settle.debounce;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * A round's delete of its fired timers ({@link TimerFirer#DELETE_FIRED}) touches those rows and no other, though they
 * are most of the (small, as the timer table is) table: the timers another debounce instance is firing meanwhile (it
 * keeps them locked while it waits for the broker's acks, seconds while the broker is away) hold it up not at all. A
 * delete by a list of ids without the primary key forced ({@code LockedById}) was run by MariaDB 11.4 as a scan of the
 * whole table, which waited for those rows while it held its own, and every arm of its sessions behind them.
 */
class FiredTimersLockScopeTest {
    private static HikariDataSource migrated;
    /** The worker's pool: the server's default isolation (REPEATABLE READ) and prepared statements, as it runs. */
    private static HikariDataSource db;

    private static JdbcClient jdbc;
    private static Sessions sessions;

    @BeforeAll
    static void migrate() {
        migrated = Databases.migrated("firedscope");
        db = new HikariDataSource();
        db.setJdbcUrl(migrated.getJdbcUrl());
        db.setUsername("root");
        db.setPassword("");
        db.setMaximumPoolSize(4);
        db.addDataSourceProperty("useServerPrepStmts", "true");
        jdbc = JdbcClient.create(db);
        sessions = new Sessions(jdbc);
    }

    @AfterAll
    static void close() {
        db.close();
        migrated.close();
    }

    @Test
    void deleting_most_of_the_timer_table_waits_for_no_timer_another_round_holds() throws Exception {
        Instant due = sessions.dbNow();
        List<Long> ids = new ArrayList<>();
        for (int i = 0; i < 30; i++) {
            long session = sessions.insert(1, 0, 0, due, due, null, null);
            jdbc.sql("""
                            INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at)
                            VALUES (:id, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), 1, 'message', UTC_TIMESTAMP(6))""").param("id", session).update();
            ids.add(session);
        }
        jdbc.sql("ANALYZE TABLE debounce_timer").query().listOfRows();
        List<Long> otherRound = ids.subList(0, 3);
        List<Long> fired = ids.subList(3, ids.size());
        try (Connection other = db.getConnection()) {
            other.setAutoCommit(false);
            try (Statement st = other.createStatement()) {
                st.executeQuery("SELECT session_id FROM debounce_timer WHERE session_id IN ("
                                + String.join(
                                        ",",
                                        otherRound.stream().map(String::valueOf).toList())
                                + ") FOR UPDATE")
                        .close();
            }
            TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(db));
            Integer deleted = tx.execute(status -> {
                // a statement that queued on the other round's rows gives up after a second instead of 50
                jdbc.sql("SET SESSION innodb_lock_wait_timeout = 1").update();
                try {
                    return jdbc.sql(TimerFirer.DELETE_FIRED)
                            .param("sessionIds", fired)
                            .update();
                } finally {
                    jdbc.sql("SET SESSION innodb_lock_wait_timeout = DEFAULT").update();
                }
            });
            assertThat(deleted).isEqualTo(fired.size());
            other.rollback();
        }
        assertThat(jdbc.sql("SELECT COUNT(*) FROM debounce_timer")
                        .query(Long.class)
                        .single())
                .isEqualTo(otherRound.size());
    }
}
