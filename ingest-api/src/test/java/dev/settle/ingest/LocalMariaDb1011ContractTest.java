package dev.settle.ingest;

import dev.settle.testsupport.LocalMariaDb;
import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.Test;

import java.util.Map;

/**
 * The contract on the MariaDB 10.11 of the service machines (127.0.0.1:3306, root, no password), when it answers;
 * skipped with the reason printed otherwise.
 */
class LocalMariaDb1011ContractTest extends IngestContract {
    @Override
    IngestApp start() {
        return new IngestApp(
                LocalMariaDb.newDatabaseOrSkip("LocalMariaDb1011ContractTest", "settle_compat_"),
                SharedInfra.kafkaBootstrap(),
                Map.of(
                        "spring.datasource.username",
                        LocalMariaDb.USER,
                        "spring.datasource.password",
                        LocalMariaDb.PASSWORD));
    }

    @Test
    void it_is_really_mariadb_10_11() {
        String version = app.jdbc.queryForObject("SELECT VERSION()", String.class);
        System.out.println("LocalMariaDb1011ContractTest ran on " + version);
        org.junit.jupiter.api.Assertions.assertTrue(version.startsWith("10.11"), version);
    }
}
