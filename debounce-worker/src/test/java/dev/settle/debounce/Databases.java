package dev.settle.debounce;

import com.zaxxer.hikari.HikariDataSource;
import dev.settle.testsupport.Migrations;
import dev.settle.testsupport.SharedInfra;

/** A fresh migrated database, for tests of the SQL alone (no application context). */
final class Databases {
    private Databases() {}

    /**
     * A pool on a new database with the changelog applied; the session time zone is deliberately not UTC
     * (+05:00) to show that nothing depends on it.
     */
    static HikariDataSource migrated(String hint) {
        return migratedAt(SharedInfra.newDatabase(hint));
    }

    /** {@link #migrated(String)} on the database at {@code jdbcUrl} (root, no password). */
    static HikariDataSource migratedAt(String jdbcUrl) {
        HikariDataSource ds = new HikariDataSource();
        ds.setJdbcUrl(jdbcUrl);
        ds.setUsername("root");
        ds.setPassword("");
        ds.setMaximumPoolSize(4);
        ds.setConnectionInitSql("SET time_zone = '+05:00'");
        ds.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
        try {
            Migrations.migrate(ds);
        } catch (RuntimeException e) {
            ds.close();
            throw e;
        }
        return ds;
    }
}
