package dev.settle.ingest;

import dev.settle.testsupport.LocalMariaDb;
import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.util.Map;

/**
 * The contract on the MariaDB 10.11 of the service machines (127.0.0.1:3306, root, no password), when it answers;
 * skipped with the reason printed otherwise.
 */
class LocalMariaDb1011ContractTest extends IngestContract {
    @Override
    IngestApp start() {
        String unavailable = LocalMariaDb.unavailable();
        if (unavailable != null) {
            String reason = "LocalMariaDb1011ContractTest skipped: " + unavailable;
            System.out.println(reason);
            Assumptions.abort(reason);
        }
        return new IngestApp(LocalMariaDb.newDatabase("settle_compat_"), SharedInfra.kafkaBootstrap(),
                Map.of("spring.datasource.username", LocalMariaDb.USER, "spring.datasource.password", LocalMariaDb.PASSWORD));
    }

    @Test
    void it_is_really_mariadb_10_11() {
        String version = app.jdbc.queryForObject("SELECT VERSION()", String.class);
        System.out.println("LocalMariaDb1011ContractTest ran on " + version);
        org.junit.jupiter.api.Assertions.assertTrue(version.startsWith("10.11"), version);
    }
}
