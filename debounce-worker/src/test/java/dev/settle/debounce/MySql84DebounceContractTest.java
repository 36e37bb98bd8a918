package dev.settle.debounce;

import org.testcontainers.DockerClientFactory;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.mysql.MySQLContainer;

/** The debounce contract on MySQL 8.4 in a container; disabled (with the reason printed) where no Docker engine exists. */
@Testcontainers(disabledWithoutDocker = true)
class MySql84DebounceContractTest extends DebounceContract {
    static {
        if (!DockerClientFactory.instance().isDockerAvailable()) {
            System.out.println(
                    "MySql84DebounceContractTest skipped: no Docker engine is reachable, so MySQL 8.4 cannot "
                            + "run in a container here");
        }
    }

    @Container
    static final MySQLContainer MYSQL = new MySQLContainer("mysql:8.4")
            .withDatabaseName("settle")
            .withCommand("--character-set-server=utf8mb4", "--collation-server=utf8mb4_unicode_ci");

    @Override
    String[] database() {
        return new String[] {
            MYSQL.getJdbcUrl() + "?sslMode=DISABLED&allowPublicKeyRetrieval=true",
            MYSQL.getUsername(),
            MYSQL.getPassword()
        };
    }
}
