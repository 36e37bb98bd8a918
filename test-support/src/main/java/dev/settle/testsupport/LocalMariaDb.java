package dev.settle.testsupport;

import dev.settle.embedded.EmbeddedMariaDb;

import java.net.InetSocketAddress;
import java.net.Socket;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.Statement;

/**
 * The MariaDB 10.11 of the service machines (127.0.0.1:3306, root, no password), for the suites that also run
 * there when it answers and are skipped (with the reason printed) when it does not.
 */
public final class LocalMariaDb {
    public static final String HOST = "127.0.0.1";
    public static final int PORT = 3306;
    public static final String USER = "root";
    public static final String PASSWORD = "";

    private LocalMariaDb() {}

    /** @return why the local server cannot be used, or null when it answers */
    public static String unavailable() {
        try (Socket socket = new Socket()) {
            socket.connect(new InetSocketAddress(HOST, PORT), 500);
            return null;
        } catch (Exception e) {
            return "no database answers at " + HOST + ":" + PORT + " (" + e + ")";
        }
    }

    /**
     * {@link #newDatabase(String)} when the local server answers; otherwise prints why {@code suite} is skipped and
     * aborts the calling test or lifecycle method (JUnit assumption: skipped, not passed).
     */
    public static String newDatabaseOrSkip(String suite, String prefix) {
        String unavailable = unavailable();
        if (unavailable != null) {
            String reason = suite + " skipped: " + unavailable;
            System.out.println(reason);
            org.junit.jupiter.api.Assumptions.abort(reason);
        }
        return newDatabase(prefix);
    }

    /** Creates a database named {@code prefix} plus a unique suffix; returns its JDBC URL. */
    public static String newDatabase(String prefix) {
        String database = prefix + Long.toString(System.nanoTime(), 36);
        String server = EmbeddedMariaDb.jdbcUrl(HOST, PORT, "");
        try (Connection c = DriverManager.getConnection(server, USER, PASSWORD);
                Statement s = c.createStatement()) {
            s.execute("CREATE DATABASE `" + database + "` CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci");
        } catch (Exception e) {
            throw new IllegalStateException("cannot create database " + database + " on " + server, e);
        }
        return EmbeddedMariaDb.jdbcUrl(HOST, PORT, database);
    }
}
