package dev.settle.ingest;

import org.junit.jupiter.api.BeforeAll;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

import java.util.Map;

/**
 * {@link DeadConnectionTest} with group commit on: the kill lands on the batch's connection, the batch fails, and
 * its message is accepted alone, once.
 */
class GroupCommitDeadConnectionTest extends DeadConnectionTest {
    @BeforeAll
    static void start() {
        app = new IngestApp(
                "deadconn_gc",
                Map.of(
                        "spring.datasource.hikari.maximum-pool-size", "1",
                        "spring.datasource.hikari.minimum-idle", "1",
                        "settle.ingest.group-commit", "true"));
        killer = new JdbcTemplate(new SingleConnectionDataSource(
                app.context.getEnvironment().getProperty("spring.datasource.url"), "root", "", true));
    }
}
