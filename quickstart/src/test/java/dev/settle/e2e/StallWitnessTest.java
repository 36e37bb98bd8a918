package dev.settle.e2e;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.FutureTask;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The stall witness names the process whose connection holds a lock others wait for, by the user the connection
 * logged in as, beside the connection's id; and it sees a lock wait that begins after it started looking (the server
 * refreshes its lock views only when nobody read them for 100 ms).
 */
class StallWitnessTest {

    @Test
    void a_lock_holder_is_named_by_the_process_its_user_stands_for() throws Exception {
        String url = SharedInfra.newDatabase("witness");
        String holderUser = ChaosRunTest.NAMED_USERS ? "agent-7" : "root";
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(url);
        config.setUsername("root");
        config.setMaximumPoolSize(1);
        try (HikariDataSource pool = new HikariDataSource(config);
                Connection holder = DriverManager.getConnection(url, holderUser, "");
                Connection waiter = DriverManager.getConnection(url, "root", "");
                StallWitness witness =
                        new StallWitness(url, pool, user -> holderUser.equals(user) ? "the holder's process" : null)) {
            try (Statement st = holder.createStatement()) {
                st.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB");
                st.execute("INSERT INTO t VALUES (1, 0)");
            }
            holder.setAutoCommit(false);
            try (Statement st = holder.createStatement()) {
                st.executeUpdate("UPDATE t SET v = 1 WHERE id = 1"); // holds the row, idle in its transaction
            }
            FutureTask<Integer> waiting = new FutureTask<>(() -> {
                try (Statement st = waiter.createStatement()) {
                    return st.executeUpdate("UPDATE t SET v = 2 WHERE id = 1");
                }
            });
            Thread.ofPlatform().start(waiting);
            try {
                await().atMost(Duration.ofSeconds(20))
                        .until(
                                () -> witness.longestHolders(1),
                                h -> h.contains("in the holder's process held X lock on `")
                                        && h.contains("while idle in transaction"));
            } finally {
                holder.rollback();
            }
            assertEquals(1, waiting.get(30, TimeUnit.SECONDS), "the waiter's update ran once the holder let go");
        }
    }
}
