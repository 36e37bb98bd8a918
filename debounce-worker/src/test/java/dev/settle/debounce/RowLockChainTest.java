package dev.settle.debounce;

import com.zaxxer.hikari.HikariDataSource;
import dev.settle.contracts.MessageAccepted;
import dev.settle.schema.DbTime;
import dev.settle.schema.DebounceTiming;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

/**
 * A POST never waits for Kafka through the timer table. {@link TimerFirer} keeps the timer rows it fires locked
 * while it waits for the broker's acks (seconds, while the broker is away). The debounce worker's other writers
 * of {@code debounce_timer} (arming for a message, the stranded-session sweep) run under REPEATABLE READ, the
 * server's default: none of them may hold a lock on a {@code chat_session} row while it queues on a timer row,
 * or ingest's upsert of that session, and the POST's 202 with it, waits for the broker.
 */
class RowLockChainTest {
    /** Transactions of this test's database waiting for a lock in a statement on debounce_timer. */
    static final String TIMER_LOCK_WAITS = """
            SELECT COUNT(*) FROM information_schema.INNODB_TRX t
              JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
             WHERE p.DB = DATABASE() AND t.trx_state = 'LOCK WAIT' AND t.trx_query LIKE '%debounce_timer%'""";

    private static HikariDataSource migrated;
    /** The worker's pool: the server's default isolation (REPEATABLE READ), as the debounce worker runs. */
    private static HikariDataSource worker;

    private static JdbcClient jdbc;
    private static Sessions sessions;

    @BeforeAll
    static void migrate() {
        migrated = Databases.migrated("rowlockchain");
        worker = new HikariDataSource();
        worker.setJdbcUrl(migrated.getJdbcUrl());
        worker.setUsername("root");
        worker.setPassword("");
        worker.setMaximumPoolSize(4);
        jdbc = JdbcClient.create(worker);
        sessions = new Sessions(jdbc);
    }

    @AfterAll
    static void close() {
        worker.close();
        migrated.close();
    }

    @Test
    void arming_for_a_message_queued_on_a_firing_timer_does_not_hold_the_session_row() throws Exception {
        Instant old = sessions.dbNow().minusSeconds(1);
        long session = sessions.insert(2, 0, 0, old, old, null, null);
        armDueTimer(session);
        DebounceTimers timers =
                TestTimers.adaptive(jdbc, new DebounceTiming(Duration.ofMillis(600), Duration.ofSeconds(10)));

        whileTheFirerHoldsTheTimer(session, () -> timers.arm(new MessageAccepted(session, 2, old, old)), true);

        assertThat(sessions.timer(session).orElseThrow().armedVersion()).isEqualTo(2);
    }

    @Test
    void the_stranded_session_sweep_does_not_hold_session_rows_while_a_timer_fires() throws Exception {
        Instant old = sessions.dbNow().minusSeconds(60);
        long stranded = sessions.insert(3, 1, 0, old, old, null, null);
        long firing = sessions.insert(2, 0, 0, old, old, null, null);
        armDueTimer(firing);
        StrandedSessionSweeper sweeper = new StrandedSessionSweeper(
                jdbc, new SweeperSettings(Duration.ofHours(1), Duration.ofSeconds(5)), TimerWake.NONE);

        whileTheFirerHoldsTheTimer(
                firing,
                () -> {
                    // ingest's upsert of the stranded session, racing the sweep that reads it
                    return sweeper.sweep();
                },
                false,
                stranded);

        assertThat(sessions.timer(stranded).orElseThrow().armedBy()).isEqualTo("sweeper");
        assertThat(sessions.timer(firing).orElseThrow().armedBy()).isEqualTo("window");
    }

    private static void armDueTimer(long session) {
        jdbc.sql("""
                        INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at)
                        VALUES (:id, :due, :due, 1, 'window', UTC_TIMESTAMP(6))""")
                .param("id", session)
                .param("due", DbTime.utc(sessions.dbNow()))
                .update();
    }

    /**
     * Locks {@code timerSession}'s timer row as the firer does, runs {@code writer} on another thread, waits until
     * it queues on the locked row ({@code mustQueue}) or finishes, then updates each of {@code ingestSessions}
     * (default: the timer's session) as ingest's upsert does and requires each update to finish at once.
     */
    private static void whileTheFirerHoldsTheTimer(
            long timerSession, Supplier<?> writer, boolean mustQueue, long... ingestSessions) throws Exception {
        long[] updated = ingestSessions.length == 0 ? new long[] {timerSession} : ingestSessions;
        try (ExecutorService pool = Executors.newSingleThreadExecutor();
                Connection firer = worker.getConnection();
                Connection ingest = worker.getConnection()) {
            firer.setAutoCommit(false);
            try (Statement st = firer.createStatement()) {
                st.executeQuery("SELECT session_id FROM debounce_timer WHERE session_id = " + timerSession
                                + " FOR UPDATE")
                        .close();
            }
            Future<?> write = pool.submit(writer::get);
            if (mustQueue) {
                await("the writer queues on the locked timer row")
                        .atMost(Duration.ofSeconds(30))
                        .failFast("the writer finished instead of queueing on the locked timer row", write::isDone)
                        .until(() -> count(TIMER_LOCK_WAITS) == 1);
            } else {
                await("the writer queues on the locked timer row or finishes")
                        .atMost(Duration.ofSeconds(30))
                        .until(() -> write.isDone() || count(TIMER_LOCK_WAITS) == 1);
            }
            try (Statement st = ingest.createStatement()) {
                st.execute("SET SESSION innodb_lock_wait_timeout = 2");
                for (long session : updated) {
                    long started = System.nanoTime();
                    int rows = st.executeUpdate("UPDATE chat_session SET version = version + 1, "
                            + "last_message_at = UTC_TIMESTAMP(6) WHERE id = " + session);
                    long ms = Duration.ofNanos(System.nanoTime() - started).toMillis();
                    assertThat(rows).isEqualTo(1);
                    assertThat(ms)
                            .as("ingest's upsert of session %d waited %d ms", session, ms)
                            .isLessThan(1000);
                }
            }
            firer.rollback();
            write.get(10, TimeUnit.SECONDS);
        }
    }

    private static long count(String sql) {
        return jdbc.sql(sql).query(Long.class).single();
    }
}
