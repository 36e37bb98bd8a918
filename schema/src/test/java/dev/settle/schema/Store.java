package dev.settle.schema;

import com.zaxxer.hikari.HikariDataSource;
import dev.settle.testsupport.Migrations;
import dev.settle.testsupport.SharedInfra;

/** A fresh database with the changelog applied, for tests of the store contract alone (no application context). */
final class Store {
    private Store() {}

    /**
     * One connection (so a test may freeze the session's clock with {@code SET timestamp}), on a new database with
     * the changelog applied; the session time zone is deliberately not UTC (+05:00) to show that nothing depends
     * on it.
     */
    static HikariDataSource migrated(String hint) {
        HikariDataSource ds = new HikariDataSource();
        ds.setJdbcUrl(SharedInfra.newDatabase(hint));
        ds.setUsername("root");
        ds.setPassword("");
        ds.setMaximumPoolSize(1);
        ds.setConnectionInitSql("SET time_zone = '+05:00'");
        try {
            Migrations.migrate(ds);
        } catch (RuntimeException e) {
            ds.close();
            throw e;
        }
        return ds;
    }
}
