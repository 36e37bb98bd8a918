package dev.settle.ingest;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpResponse;
import java.util.Map;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A database connection killed under a POST does not leave the client guessing: the ingest API settles the
 * outcome by the message id chosen before the transaction and retries a transaction that rolled back, so the
 * message is accepted once ("accepted means durable", docs/PROMISES.md). One pooled connection makes the kill
 * land on the connection the next POST uses.
 */
class DeadConnectionTest {
    static IngestApp app;
    static JdbcTemplate killer;

    @BeforeAll
    static void start() {
        app = new IngestApp(
                "deadconn",
                Map.of(
                        "spring.datasource.hikari.maximum-pool-size", "1",
                        "spring.datasource.hikari.minimum-idle", "1"));
        killer = new JdbcTemplate(new SingleConnectionDataSource(
                app.context.getEnvironment().getProperty("spring.datasource.url"), "root", "", true));
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    @Test
    void a_killed_database_connection_under_a_post_still_accepts_exactly_once() {
        for (int round = 0; round < 5; round++) {
            String s = "dead-" + UUID.randomUUID();
            assertEquals(
                    202,
                    app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"warm\"}")
                            .statusCode());
            Long pooled = killer.queryForObject("""
                    SELECT MIN(ID) FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID()""", Long.class);
            killer.execute("KILL CONNECTION " + pooled);
            HttpResponse<String> r =
                    app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"after the kill\"}");
            assertEquals(202, r.statusCode(), r.body());
            assertEquals(
                    2, JsonMapper.shared().readTree(r.body()).get("version").asLong());
            assertEquals(2, killer.queryForObject("""
                    SELECT COUNT(*) FROM chat_message m JOIN chat_session s ON s.id = m.session_id WHERE s.external_id = ?""", Integer.class, s));
        }
    }
}
