package dev.settle.e2e;

import dev.settle.testsupport.LocalMariaDb;

import java.util.Map;

/**
 * The spine's scenarios with all three applications on the MariaDB 10.11 of the service machines
 * (127.0.0.1:3306), when it answers; skipped with the reason printed otherwise. Until this ran, only ingest had a
 * 10.11 leg, and the debounce worker never fired a timer there (Connector/J dropped the fractional seconds of
 * temporal parameters for a server announcing {@code 5.5.5-10.x}; see {@code DbTime}).
 */
class LocalMariaDb1011SpineTest extends SpineTest {

    @Override
    SettleSystem system() {
        SettleSystem system = new SettleSystem(
                "spine1011",
                true,
                Map.of(
                        "spring.datasource.url",
                        LocalMariaDb.newDatabaseOrSkip("LocalMariaDb1011SpineTest", "settle_spine_")));
        System.out.println(
                "LocalMariaDb1011SpineTest runs on " + system.jdbc.queryForObject("SELECT VERSION()", String.class));
        return system;
    }
}
