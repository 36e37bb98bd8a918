package dev.settle.portability;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.List;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** The checker itself: each known-bad shape is found, each portable rewrite passes, so it cannot silently pass. */
class SqlPortabilityTest {

    @ParameterizedTest
    @ValueSource(
            strings = {
                // SUBQUERY_ON_TARGET: the target read in a subquery, directly or through a derived table MySQL may
                // merge
                "SUBQUERY_ON_TARGET|UPDATE webhook_delivery d SET d.claim_token = ? WHERE d.id = ? AND NOT EXISTS (SELECT 1 FROM webhook_delivery e WHERE e.session_id = d.session_id AND e.id < d.id)",
                "SUBQUERY_ON_TARGET|update t set a = (select max(a) from t) where id = ?",
                "SUBQUERY_ON_TARGET|DELETE FROM t WHERE id IN (SELECT id FROM t WHERE x = 1)",
                "SUBQUERY_ON_TARGET|DELETE FROM `t` WHERE id IN (SELECT x.id FROM s JOIN `t` x ON x.id = s.id)",
                "SUBQUERY_ON_TARGET|UPDATE t SET a = 1 WHERE id IN (SELECT id FROM (SELECT id FROM t WHERE b = 2) AS x)",
                "SUBQUERY_ON_TARGET|INSERT INTO t (a) SELECT 1 FROM DUAL WHERE NOT EXISTS (SELECT 1 FROM t WHERE a = 1)",
                "SUBQUERY_ON_TARGET|INSERT INTO t (a, b) VALUES (?, (SELECT MAX(b) FROM t))",
                // VALUES() and the MySQL-only row alias in upserts
                "VALUES_IN_UPSERT|INSERT INTO e (url, reason) VALUES (?, ?) ON DUPLICATE KEY UPDATE reason = VALUES(reason)",
                "VALUES_IN_UPSERT|insert into e (url, reason) values (?, ?) on duplicate key update reason = values (reason)",
                "UPSERT_ROW_ALIAS|INSERT INTO e (url, reason) VALUES (?, ?) AS new ON DUPLICATE KEY UPDATE reason = new.reason",
                // RETURNING, sequences
                "RETURNING|INSERT INTO t (a) VALUES (1) RETURNING id",
                "RETURNING|DELETE FROM t WHERE a = 1 RETURNING id",
                "RETURNING|REPLACE INTO t (a) VALUES (1) RETURNING *",
                "SEQUENCE|CREATE SEQUENCE s START WITH 1",
                "SEQUENCE|SELECT NEXT VALUE FOR s",
                "MARIADB_ONLY_FUNCTION|SELECT NEXTVAL(s)",
                "MARIADB_ONLY_FUNCTION|SELECT LASTVAL(s)",
                // MariaDB-only functions and syntax, MySQL-only functions
                "MARIADB_ONLY_FUNCTION|SELECT JSON_DETAILED(data) FROM session_event",
                "MARIADB_ONLY_FUNCTION|SELECT COLUMN_GET(d, 1 AS CHAR) FROM t",
                "MARIADB_ONLY_FUNCTION|SELECT DECODE_HISTOGRAM(hist_type, histogram) FROM mysql.column_stats",
                "MARIADB_ONLY_FUNCTION|SELECT NVL(a, 0) FROM t",
                "MYSQL_ONLY_FUNCTION|SELECT BIN_TO_UUID(id) FROM t",
                "MYSQL_ONLY_FUNCTION|SELECT ANY_VALUE(a) FROM t GROUP BY b",
                "MARIADB_ONLY_DDL|ALTER TABLE t ADD COLUMN IF NOT EXISTS c INT",
                "MARIADB_ONLY_DDL|CREATE OR REPLACE TABLE t (a INT)",
                "MARIADB_ONLY_DDL|CREATE INDEX IF NOT EXISTS ix ON t (a)",
                "MARIADB_ONLY_CLAUSE|SELECT id FROM t WHERE a = 1 FOR UPDATE WAIT 5",
                "MARIADB_ONLY_CLAUSE|SELECT id FROM t ORDER BY id OFFSET 5 ROWS FETCH NEXT 5 ROWS ONLY",
                "LOCKING_CLAUSE_POSITION|SELECT id FROM t FOR UPDATE SKIP LOCKED LIMIT 5",
                // refused by both, caught anyway
                "LIMIT_IN_IN_SUBQUERY|SELECT id FROM t WHERE id IN (SELECT id FROM s ORDER BY id LIMIT 5)",
                "MULTI_TABLE_ORDER_LIMIT|UPDATE t JOIN s ON s.id = t.id SET t.a = 1 WHERE s.b = 2 ORDER BY t.id LIMIT 1"
            })
    void finds_each_known_bad_shape(String rowAndSql) {
        String rule = rowAndSql.substring(0, rowAndSql.indexOf('|'));
        String sql = rowAndSql.substring(rowAndSql.indexOf('|') + 1);
        List<SqlPortability.Finding> findings = SqlPortability.check(sql);
        assertFalse(findings.isEmpty(), "no finding for " + sql);
        assertEquals(rule, findings.getFirst().rule(), findings.toString());
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                // the portable forms: a derived table that cannot be merged, the target only in INSERT ... SELECT's
                // FROM
                "UPDATE webhook_delivery d SET d.claim_token = ? WHERE d.id = ? AND d.id = (SELECT f.first_id FROM (SELECT MIN(e.id) AS first_id FROM webhook_delivery e WHERE e.status = 'PENDING' AND e.session_id = (SELECT x.session_id FROM webhook_delivery x WHERE x.id = ?)) AS f)",
                "DELETE FROM t WHERE id IN (SELECT id FROM (SELECT id FROM t ORDER BY id LIMIT 10) AS x)",
                "UPDATE t JOIN (SELECT b, MAX(a) AS m FROM t GROUP BY b) x ON x.b = t.b SET t.a = x.m",
                "UPDATE chat_session SET oldest_unanswered_at = (SELECT MIN(m.created_at) FROM chat_message m WHERE m.session_id = ?) WHERE id = ?",
                "INSERT INTO d (session_id) SELECT s.id FROM s LEFT JOIN d t ON t.session_id = s.id WHERE t.session_id IS NULL ON DUPLICATE KEY UPDATE session_id = d.session_id",
                "INSERT INTO t (a, b) SELECT a, b + 1 FROM t WHERE a = 1",
                "INSERT INTO t (a, b) SELECT s.a, 1 FROM s ON DUPLICATE KEY UPDATE b = LEAST(t.b, 2), a = GREATEST(t.a, 3)",
                "INSERT INTO e (url, reason) VALUES (?, ?) ON DUPLICATE KEY UPDATE reason = ?",
                "SELECT id FROM t WHERE fire_at <= UTC_TIMESTAMP(6) ORDER BY fire_at LIMIT ? FOR UPDATE SKIP LOCKED",
                "INSERT IGNORE INTO b (s, v) VALUES (?, ?)",
                // words inside literals and comments are not statements
                "SELECT 'RETURNING NEXTVAL(x) VALUES(' AS note FROM t -- RETURNING\n WHERE a = 1",
                "UPDATE t SET note = 'x FROM t y' WHERE id = ?",
                "SELECT JSON_EXTRACT(data, '$.a'), t.nvl_flag FROM t",
                "UPDATE chat_session SET event_seq = LAST_INSERT_ID(event_seq + ?) WHERE id = ?",
                "SELECT a FROM ((SELECT a FROM t ORDER BY a LIMIT ?) UNION ALL (SELECT a FROM s ORDER BY a LIMIT ?)) x LIMIT ?"
            })
    void accepts_the_portable_forms(String sql) {
        assertEquals(List.of(), SqlPortability.check(sql), sql);
    }

    @Test
    void finds_an_insert_select_into_a_table_with_an_auto_increment_key_and_accepts_the_guarded_form() {
        Set<String> autoInc = SqlPortability.autoIncrementTables(List.of(
                "CREATE TABLE chat_turn (\n  id BIGINT NOT NULL AUTO_INCREMENT,\n  session_id BIGINT NOT NULL,\n"
                        + "  PRIMARY KEY (id)\n) ENGINE=InnoDB",
                "CREATE TABLE debounce_timer (session_id BIGINT NOT NULL, PRIMARY KEY (session_id))"));
        assertEquals(Set.of("CHAT_TURN"), autoInc);
        List<SqlPortability.Finding> findings = SqlPortability.check(
                "INSERT INTO chat_turn (session_id, state) SELECT s.id, 'RUNNING' FROM chat_session s WHERE s.id = ?",
                autoInc);
        assertEquals(
                List.of("AUTO_INC_INSERT_SELECT"),
                findings.stream().map(SqlPortability.Finding::rule).toList());
        for (String fine : List.of(
                "INSERT INTO chat_turn (session_id, state) VALUES ((SELECT s.id FROM chat_session s WHERE s.id = ?), ?)",
                "INSERT INTO debounce_timer (session_id) SELECT s.id FROM chat_session s WHERE s.id = ?",
                "INSERT INTO chat_turn (session_id, state) VALUE (?, 'RUNNING')")) {
            assertEquals(List.of(), SqlPortability.check(fine, autoInc), fine);
        }
    }
}
