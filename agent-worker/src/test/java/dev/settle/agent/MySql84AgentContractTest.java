package dev.settle.agent;

import org.testcontainers.DockerClientFactory;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.mysql.MySQLContainer;

import java.util.Map;

/** The agent contract on MySQL 8.4 in a container; disabled (with the reason printed) where no Docker engine exists. */
@Testcontainers(disabledWithoutDocker = true)
class MySql84AgentContractTest extends AgentContract {
    static {
        if (!DockerClientFactory.instance().isDockerAvailable()) {
            System.out.println(
                    "MySql84AgentContractTest skipped: no Docker engine is reachable, so MySQL 8.4 cannot run "
                            + "in a container here");
        }
    }

    @Container
    static final MySQLContainer MYSQL = new MySQLContainer("mysql:8.4")
            .withDatabaseName("settle")
            .withCommand("--character-set-server=utf8mb4", "--collation-server=utf8mb4_unicode_ci");

    @Override
    Map<String, Object> database() {
        return Map.of(
                "spring.datasource.url",
                MYSQL.getJdbcUrl() + "?sslMode=DISABLED&allowPublicKeyRetrieval=true",
                "spring.datasource.username",
                MYSQL.getUsername(),
                "spring.datasource.password",
                MYSQL.getPassword());
    }
}
