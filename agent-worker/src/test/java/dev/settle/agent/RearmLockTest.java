package dev.settle.agent;

import dev.settle.agent.turn.WorkWaker;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The agent's re-arm never makes a POST wait for Kafka: the debounce worker's TimerFirer holds the timer rows it
 * is firing (FOR UPDATE) while it waits for the broker's acks (seconds while the broker is away). A re-arm that
 * took a shared lock on the session row and then queued on that timer row would hold ingest's upsert of the
 * session (an exclusive lock) behind it, so the re-arm reads the session without locking it.
 */
class RearmLockTest {
    @Test
    void a_rearm_queued_on_a_timer_row_does_not_hold_the_session_row_against_ingest() throws Exception {
        try (TestAgent agent = new TestAgent("rearmlock", Map.of());
                ExecutorService pool = Executors.newFixedThreadPool(1)) {
            long session = agent.sessionWithMessages(2);
            agent.jdbc.update("""
                    INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at)
                    VALUES (?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), 2, 'window', UTC_TIMESTAMP(6))""", session);
            try (Connection firer = agent.jdbc.getDataSource().getConnection();
                    Connection ingest = agent.jdbc.getDataSource().getConnection()) {
                // the TimerFirer's round: the due row locked while it waits for a broker that is away
                firer.setAutoCommit(false);
                try (Statement st = firer.createStatement()) {
                    st.executeQuery("SELECT session_id FROM debounce_timer WHERE session_id = " + session
                                    + " FOR UPDATE")
                            .close();
                }
                Future<?> rearm = pool.submit(() -> agent.bean(WorkWaker.class).rearmIfPending(session));
                // the re-arm's transaction is seen by the server in a lock wait on the timer row
                await("the re-arm queues on the locked timer row")
                        .atMost(Duration.ofSeconds(30))
                        .failFast("the re-arm finished instead of queueing on the locked timer row", rearm::isDone)
                        .until(() -> agent.lockWaitsOn("debounce_timer") == 1);

                // ingest's upsert for a new message on the session, with a short lock wait
                try (Statement st = ingest.createStatement()) {
                    st.execute("SET SESSION innodb_lock_wait_timeout = 2");
                    long started = System.nanoTime();
                    int rows = st.executeUpdate(
                            "UPDATE chat_session SET version = version + 1, last_message_at = UTC_TIMESTAMP(6) WHERE id = "
                                    + session);
                    assertEquals(1, rows);
                    long ms = Duration.ofNanos(System.nanoTime() - started).toMillis();
                    org.junit.jupiter.api.Assertions.assertTrue(ms < 1000, "ingest's upsert waited " + ms + " ms");
                }
                firer.rollback();
                rearm.get(10, TimeUnit.SECONDS);
            }
            assertEquals(1, agent.count("SELECT COUNT(*) FROM debounce_timer WHERE session_id = ?", session));
        }
    }
}
