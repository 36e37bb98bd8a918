package dev.settle.ingest;

import org.testcontainers.DockerClientFactory;
import org.testcontainers.junit.jupiter.Container;
import org.testcontainers.junit.jupiter.Testcontainers;
import org.testcontainers.kafka.KafkaContainer;
import org.testcontainers.mysql.MySQLContainer;

import java.util.Map;

/**
 * The contract on MySQL 8.4 and a real Kafka broker in containers; disabled cleanly (with the reason printed)
 * where no Docker engine exists.
 */
@Testcontainers(disabledWithoutDocker = true)
class MySql84ContractTest extends IngestContract {
    static {
        if (!DockerClientFactory.instance().isDockerAvailable()) {
            System.out.println("MySql84ContractTest skipped: no Docker engine is reachable, so MySQL 8.4 and Kafka "
                    + "cannot run in containers here");
        }
    }

    @Container
    static final MySQLContainer MYSQL = new MySQLContainer("mysql:8.4")
            .withDatabaseName("settle")
            .withCommand("--character-set-server=utf8mb4", "--collation-server=utf8mb4_unicode_ci");

    @Container
    static final KafkaContainer KAFKA = new KafkaContainer("apache/kafka:3.9.1");

    @Override
    IngestApp start() {
        return new IngestApp(
                MYSQL.getJdbcUrl() + "?sslMode=DISABLED&allowPublicKeyRetrieval=true",
                KAFKA.getBootstrapServers(),
                Map.of(
                        "spring.datasource.username",
                        MYSQL.getUsername(),
                        "spring.datasource.password",
                        MYSQL.getPassword()));
    }
}
