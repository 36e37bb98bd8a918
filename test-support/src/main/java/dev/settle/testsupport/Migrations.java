package dev.settle.testsupport;

import liquibase.integration.spring.SpringLiquibase;
import org.springframework.core.io.DefaultResourceLoader;

import javax.sql.DataSource;

/** Brings a test's database to the current schema: Settle's one Liquibase changelog, as the applications run it. */
public final class Migrations {
    private Migrations() {}

    /** Applies {@code db/settle-changelog.sql} to {@code dataSource}. */
    public static void migrate(DataSource dataSource) {
        SpringLiquibase liquibase = new SpringLiquibase();
        liquibase.setDataSource(dataSource);
        liquibase.setChangeLog("classpath:db/settle-changelog.sql");
        liquibase.setResourceLoader(new DefaultResourceLoader());
        try {
            liquibase.afterPropertiesSet();
        } catch (Exception e) {
            throw new IllegalStateException("migrating the test database failed", e);
        }
    }
}
