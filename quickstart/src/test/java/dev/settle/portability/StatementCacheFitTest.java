package dev.settle.portability;

import dev.settle.boot.SettleDefaults;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.TreeMap;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every fixed SQL text of the services fits Connector/J's statement cache ({@code prepStmtCacheSqlLimit}, set once in
 * {@link SettleDefaults}): a longer text is not cached, so the driver parses it again on every execution (the turn's
 * one read, at 2,322 characters, cost the agent worker 8 % of its CPU so). Templates completed at run time
 * ({@code %s}: lists whose length varies) are left out; every length of such a list is a text of its own.
 */
class StatementCacheFitTest {
    static final String LIMIT = "spring.datasource.hikari.data-source-properties.prepStmtCacheSqlLimit";

    @Test
    void every_fixed_statement_fits_the_drivers_statement_cache() throws Exception {
        int limit = Integer.parseInt(String.valueOf(SettleDefaults.properties().get(LIMIT)));
        Map<String, String> statements = ServiceSqlPortabilityTest.collect();
        assertTrue(
                statements.containsKey("dev.settle.agent.turn.Conversation.READ"),
                "the collector sees the turn's read");
        Map<String, Integer> tooLong = new TreeMap<>();
        statements.forEach((where, sql) -> {
            if (!where.startsWith("changelog#") && !sql.contains("%s") && sql.length() > limit) {
                tooLong.put(where, sql.length());
            }
        });
        assertEquals(
                Map.of(), tooLong, "statements longer than " + LIMIT + " = " + limit + " (parsed on every execution)");
    }
}
