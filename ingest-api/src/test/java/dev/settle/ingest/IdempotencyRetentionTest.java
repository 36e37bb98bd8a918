package dev.settle.ingest;

import dev.settle.ingest.accept.IdempotencyRetention;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpResponse;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;

/**
 * Idempotency keys are honoured for the retention (24 h by default) and forgotten after it: a replay inside it is
 * answered from the stored message, with nothing stored; a key past it creates a new message.
 */
class IdempotencyRetentionTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    static IngestApp app;

    @BeforeAll
    static void start() {
        app = new IngestApp("idem_retention");
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    static HttpResponse<String> post(String session, String text, String key) {
        return app.post(
                "/v1/sessions/" + session + "/messages",
                "application/json",
                "{\"text\":\"" + text + "\"}",
                "Idempotency-Key",
                key);
    }

    static JsonNode json(HttpResponse<String> r) {
        assertEquals(202, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    static long messages(String session) {
        return app.jdbc.queryForObject(
                "SELECT COUNT(*) FROM chat_message m JOIN chat_session s ON s.id = m.session_id "
                        + "WHERE s.external_id = ?",
                Long.class,
                session);
    }

    @Test
    void a_key_is_honoured_inside_the_retention_and_forgotten_past_it() {
        IdempotencyRetention retention = app.context.getBean(IdempotencyRetention.class);
        String s = "retention-1";
        JsonNode old = json(post(s, "old", "key-old"));
        JsonNode recent = json(post(s, "recent", "key-recent"));
        app.jdbc.update(
                "UPDATE chat_message SET created_at = DATE_SUB(created_at, INTERVAL 25 HOUR) WHERE idempotency_key = 'key-old'");
        app.jdbc.update(
                "UPDATE chat_message SET created_at = DATE_SUB(created_at, INTERVAL 23 HOUR) WHERE idempotency_key = 'key-recent'");

        assertEquals(1, retention.purge(), "exactly the key past 24 h is forgotten");
        assertEquals(0, retention.purge(), "a second purge finds nothing new");

        JsonNode replay = json(post(s, "recent", "key-recent"));
        assertEquals(
                recent.get("messageId").asString(),
                replay.get("messageId").asString(),
                "inside the retention: a replay");
        assertEquals(recent.get("version").asLong(), replay.get("version").asLong());
        assertEquals(422, post(s, "another body", "key-recent").statusCode(), "inside the retention: reuse refused");
        assertEquals(2, messages(s));

        JsonNode again = json(post(s, "old", "key-old"));
        assertNotEquals(
                old.get("messageId").asString(), again.get("messageId").asString(), "past the retention: new message");
        assertEquals(3, again.get("version").asLong());
        assertEquals(3, messages(s));
        assertEquals(
                again.get("messageId").asString(),
                json(post(s, "old", "key-old")).get("messageId").asString(),
                "the key now names the new message");
    }
}
