package dev.settle.e2e;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The stall witness names the process whose connection holds a lock others wait for, by the user the connection
 * logged in as, beside the connection's id.
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
                        new StallWitness(url, pool, user -> user.equals(holderUser) ? "the holder's process" : null)) {
            try (Statement st = holder.createStatement()) {
                st.execute("CREATE TABLE t (id INT PRIMARY KEY, v INT) ENGINE=InnoDB");
                st.execute("INSERT INTO t VALUES (1, 0)");
            }
            holder.setAutoCommit(false);
            try (Statement st = holder.createStatement()) {
                st.executeUpdate("UPDATE t SET v = 1 WHERE id = 1"); // holds the row, idle in its transaction
            }
            CompletableFuture<Integer> waiting = CompletableFuture.supplyAsync(() -> {
                try (Statement st = waiter.createStatement()) {
                    return st.executeUpdate("UPDATE t SET v = 2 WHERE id = 1");
                } catch (java.sql.SQLException e) {
                    throw new IllegalStateException(e);
                }
            });
            try {
                await().atMost(Duration.ofSeconds(20))
                        .until(
                                () -> witness.longestHolders(1),
                                h -> h.contains("in the holder's process held X lock on `")
                                        && h.contains("while idle in transaction"));
            } finally {
                holder.rollback();
            }
            assertEquals(1, waiting.get(), "the waiter's update ran once the holder let go");
        }
    }
}
