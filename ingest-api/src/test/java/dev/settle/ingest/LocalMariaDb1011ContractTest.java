package dev.settle.ingest;

import dev.settle.testsupport.EmbeddedMariaDb;
import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

import java.net.InetSocketAddress;
import java.net.Socket;
import java.util.Map;

/**
 * The contract on the MariaDB 10.11 of the service machines (127.0.0.1:3306, root, no password), when it answers;
 * skipped with the reason printed otherwise.
 */
class LocalMariaDb1011ContractTest extends IngestContract {
    @Override
    IngestApp start() {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress("127.0.0.1", 3306), 500);
        } catch (Exception e) {
            String reason = "LocalMariaDb1011ContractTest skipped: no database answers at 127.0.0.1:3306 (" + e + ")";
            System.out.println(reason);
            Assumptions.abort(reason);
        }
        String database = "settle_compat_" + Long.toString(System.nanoTime(), 36);
        createDatabase(EmbeddedMariaDb.jdbcUrl("127.0.0.1", 3306, ""), "root", "", database);
        return new IngestApp(EmbeddedMariaDb.jdbcUrl("127.0.0.1", 3306, database), SharedInfra.kafkaBootstrap(),
                Map.of("spring.datasource.username", "root", "spring.datasource.password", ""));
    }

    @Test
    void it_is_really_mariadb_10_11() {
        String version = app.jdbc.queryForObject("SELECT VERSION()", String.class);
        System.out.println("LocalMariaDb1011ContractTest ran on " + version);
        org.junit.jupiter.api.Assertions.assertTrue(version.startsWith("10.11"), version);
    }
}
