package dev.settle.ingest;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.List;
import java.util.Map;
import java.util.stream.StreamSupport;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The dead-letter list and the replay of one delivery, over HTTP on a real database. */
class WebhookDeliveriesApiTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String PATH = "/v1/webhooks/deliveries";
    static IngestApp app;
    static long failed;
    static long pending;
    static long delivered;
    static long otherSession;

    @BeforeAll
    static void start() {
        app = new IngestApp("webhookapi");
        assertEquals(
                202,
                app.post("/v1/sessions/hooks-a/messages", "application/json", "{\"text\":\"a\"}")
                        .statusCode());
        assertEquals(
                202,
                app.post("/v1/sessions/hooks-b/messages", "application/json", "{\"text\":\"b\"}")
                        .statusCode());
        long a = app.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = 'hooks-a'", Long.class);
        long b = app.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = 'hooks-b'", Long.class);
        delivered = delivery("wh_delivered", a, "DELIVERED", 1, 200, null);
        attempt(delivered, 1, 200, 12, null);
        failed = delivery("wh_failed", a, "FAILED", 3, 500, "exhausted: 3 attempts failed, the last with HTTP 500");
        attempt(failed, 1, 500, 10, "HTTP 500");
        attempt(failed, 2, null, 15000, "timeout: no complete answer within 15000 ms");
        attempt(failed, 3, 500, 9, "HTTP 500");
        pending = delivery("wh_pending", a, "PENDING", 0, null, null);
        otherSession = delivery("wh_other", b, "FAILED", 1, 410, "endpoint gone: HTTP 410, endpoint disabled");
        attempt(otherSession, 1, 410, 5, "HTTP 410");
    }

    static long delivery(
            String webhookId, long session, String status, int attempts, Integer lastStatus, String lastError) {
        app.jdbc.update("""
                INSERT INTO webhook_delivery (webhook_id, session_id, event_type, endpoint_url, payload, status, attempts,
                                              next_attempt_at, last_status, last_error, created_at, delivered_at)
                VALUES (?, ?, 'reply.created', 'https://hooks.example.com/settle', '{}', ?, ?,
                        UTC_TIMESTAMP(6) + INTERVAL 5 MINUTE, ?, ?, UTC_TIMESTAMP(6),
                        IF(? = 'DELIVERED', UTC_TIMESTAMP(6), NULL))""", webhookId, session, status, attempts, lastStatus, lastError, status);
        return app.jdbc.queryForObject("SELECT id FROM webhook_delivery WHERE webhook_id = ?", Long.class, webhookId);
    }

    static void attempt(long delivery, int no, Integer status, long latencyMs, String error) {
        app.jdbc.update("""
                INSERT INTO webhook_attempt (delivery_id, attempt_no, started_at, status_code, latency_ms, error)
                VALUES (?, ?, UTC_TIMESTAMP(6), ?, ?, ?)""", delivery, no, status, latencyMs, error);
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    static JsonNode get(String query) {
        HttpResponse<String> r = app.get(PATH + query);
        assertEquals(200, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    static List<Long> ids(JsonNode page) {
        return StreamSupport.stream(page.get("deliveries").spliterator(), false)
                .map(d -> d.get("id").asLong())
                .toList();
    }

    static HttpResponse<String> retry(String id) {
        return app.send(HttpRequest.newBuilder(URI.create(app.base + PATH + "/" + id + "/retry"))
                .header("Authorization", "Bearer " + IngestApp.KEY)
                .POST(HttpRequest.BodyPublishers.noBody())
                .build());
    }

    @Test
    void lists_newest_first_with_every_field_and_the_attempts_in_order() {
        JsonNode page = get("?sessionId=hooks-a");
        assertEquals(List.of(pending, failed, delivered), ids(page));
        JsonNode f = page.get("deliveries").get(1);
        assertEquals("wh_failed", f.get("webhookId").asString());
        assertEquals("hooks-a", f.get("sessionId").asString());
        assertEquals("reply.created", f.get("type").asString());
        assertEquals("https://hooks.example.com/settle", f.get("endpoint").asString());
        assertEquals("failed", f.get("status").asString());
        assertEquals(3, f.get("attempts").asInt());
        assertTrue(f.get("nextAttemptAt").isNull(), "only pending deliveries have a next attempt");
        assertEquals(500, f.get("lastStatus").asInt());
        assertEquals(
                "exhausted: 3 attempts failed, the last with HTTP 500",
                f.get("lastError").asString());
        assertEquals(
                app.jdbc
                        .queryForObject(
                                "SELECT created_at FROM webhook_delivery WHERE id = ?",
                                java.time.LocalDateTime.class,
                                failed)
                        .toInstant(java.time.ZoneOffset.UTC)
                        .toString(),
                f.get("createdAt").asString(),
                "the row's created_at, in UTC");
        assertTrue(f.get("deliveredAt").isNull());
        JsonNode history = f.get("history");
        assertEquals(3, history.size());
        assertEquals(1, history.get(0).get("attempt").asInt());
        assertEquals(500, history.get(0).get("statusCode").asInt());
        assertEquals(10, history.get(0).get("latencyMs").asLong());
        assertEquals("HTTP 500", history.get(0).get("error").asString());
        assertTrue(history.get(1).get("statusCode").isNull());
        assertEquals(
                "timeout: no complete answer within 15000 ms",
                history.get(1).get("error").asString());
        assertTrue(history.get(0).get("time").asString().endsWith("Z"));

        JsonNode p = page.get("deliveries").get(0);
        assertEquals("pending", p.get("status").asString());
        assertTrue(p.get("nextAttemptAt").asString().endsWith("Z"));
        assertEquals(0, p.get("history").size());
        JsonNode d = page.get("deliveries").get(2);
        assertEquals("delivered", d.get("status").asString());
        assertTrue(d.get("deliveredAt").asString().endsWith("Z"));
        assertTrue(page.get("nextBefore").isNull(), "the page is not full");
    }

    @Test
    void filters_by_status_and_session_and_pages_with_limit_and_before() {
        assertEquals(List.of(otherSession, failed), ids(get("?status=failed")));
        assertEquals(List.of(otherSession, failed), ids(get("?status=FAILED")));
        assertEquals(List.of(failed), ids(get("?status=failed&sessionId=hooks-a")));
        assertEquals(List.of(pending), ids(get("?status=pending")));
        assertEquals(List.of(delivered), ids(get("?status=delivered")));
        assertEquals(List.of(), ids(get("?sessionId=no-such-session")));

        JsonNode first = get("?limit=2");
        assertEquals(List.of(otherSession, pending), ids(first));
        assertEquals(pending, first.get("nextBefore").asLong());
        JsonNode second = get("?limit=2&before=" + pending);
        assertEquals(List.of(failed, delivered), ids(second));
        assertEquals(List.of(), ids(get("?limit=2&before=" + delivered)));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @CsvSource({
        "?status=dead, invalid-status",
        "?status=, invalid-status",
        "?limit=0, invalid-limit",
        "?limit=501, invalid-limit",
        "?limit=ten, invalid-limit",
        "?before=-1, invalid-before",
        "?sessionId=bad$id, invalid-session-id",
    })
    void bad_query_parameters_are_a_400_problem(String query, String type) {
        HttpResponse<String> r = app.get(PATH + query);
        assertEquals(400, r.statusCode(), r.body());
        assertEquals(
                "application/problem+json",
                r.headers().firstValue("Content-Type").orElse("").split(";")[0]);
        assertEquals(
                "https://settle.dev/problems/" + type,
                JSON.readTree(r.body()).get("type").asString());
    }

    @Test
    void the_bearer_key_is_required() {
        HttpResponse<String> r = app.send(
                HttpRequest.newBuilder(URI.create(app.base + PATH)).GET().build());
        assertEquals(401, r.statusCode());
        HttpResponse<String> post =
                app.send(HttpRequest.newBuilder(URI.create(app.base + PATH + "/" + failed + "/retry"))
                        .POST(HttpRequest.BodyPublishers.noBody())
                        .build());
        assertEquals(401, post.statusCode());
        assertEquals(
                "FAILED",
                app.jdbc.queryForObject("SELECT status FROM webhook_delivery WHERE id = ?", String.class, failed));
    }

    @Test
    void retry_requeues_a_failed_delivery_once_with_its_webhook_id_and_refuses_the_rest() {
        long dead = delivery(
                "wh_to_retry",
                app.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = 'hooks-b'", Long.class),
                "FAILED",
                8,
                503,
                "exhausted");
        try {
            retryOnce(dead);
        } finally {
            app.jdbc.update("DELETE FROM webhook_delivery WHERE id = ?", dead); // the other tests list the fixed rows
        }
    }

    void retryOnce(long dead) {
        HttpResponse<String> r = retry(Long.toString(dead));
        assertEquals(202, r.statusCode(), r.body());
        JsonNode body = JSON.readTree(r.body());
        assertEquals(dead, body.get("id").asLong());
        assertEquals("wh_to_retry", body.get("webhookId").asString());
        assertEquals("pending", body.get("status").asString());
        assertEquals(
                app.jdbc
                        .queryForObject(
                                "SELECT replayed_at FROM webhook_delivery WHERE id = ?",
                                java.time.LocalDateTime.class,
                                dead)
                        .toInstant(java.time.ZoneOffset.UTC)
                        .toString(),
                body.get("replayedAt").asString(),
                "the replayed_at the retry stored, in UTC");
        Map<String, Object> row = app.jdbc.queryForMap("""
                SELECT status, webhook_id, attempts, attempts_before_replay, replayed_at IS NOT NULL AS replayed,
                       next_attempt_at <= UTC_TIMESTAMP(6) AS due, claim_token FROM webhook_delivery WHERE id = ?""", dead);
        assertEquals("PENDING", row.get("status"));
        assertEquals("wh_to_retry", row.get("webhook_id"));
        assertEquals(8, row.get("attempts"));
        assertEquals(8, row.get("attempts_before_replay"), "the schedule restarts after 8 attempts");
        assertEquals(1L, ((Number) row.get("replayed")).longValue());
        assertEquals(1L, ((Number) row.get("due")).longValue(), "due now");

        HttpResponse<String> again = retry(Long.toString(dead));
        assertEquals(409, again.statusCode());
        assertEquals(
                "application/problem+json",
                again.headers().firstValue("Content-Type").orElse("").split(";")[0]);
        assertEquals(
                "webhook delivery " + dead + " is pending: only failed deliveries can be retried",
                JSON.readTree(again.body()).get("detail").asString());
        HttpResponse<String> done = retry(Long.toString(delivered));
        assertEquals(409, done.statusCode());
        assertTrue(done.body().contains("is delivered"), done.body());
        assertEquals(404, retry("999999999").statusCode());
        assertEquals(400, retry("abc").statusCode());
        assertEquals(400, retry("0").statusCode());
    }
}
