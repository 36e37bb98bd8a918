package dev.settle.ingest;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The ingest contract, one abstract suite run on every database the project supports (ShedLock-style: tiny
 * subclasses per database, version and session time zone). Each subclass only says how to reach its database.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
abstract class IngestContract {
    static final JsonMapper JSON = JsonMapper.builder().build();
    IngestApp app;

    /** Starts the ingest API on the subclass's database. */
    abstract IngestApp start();

    @BeforeAll
    void startApp() {
        app = start();
    }

    @AfterAll
    void stopApp() {
        if (app != null) {
            app.close();
        }
    }

    static String sid() {
        return "c-" + UUID.randomUUID();
    }

    static JsonNode json(HttpResponse<String> r) {
        return JSON.readTree(r.body());
    }

    @Test
    void accepted_messages_are_durable_and_versions_count_up() {
        String s = sid();
        for (int i = 1; i <= 3; i++) {
            HttpResponse<String> r =
                    app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"m" + i + "\"}");
            assertEquals(202, r.statusCode(), r.body());
            assertEquals(i, json(r).get("version").asLong());
        }
        assertEquals(
                3,
                json(app.get("/v1/sessions/" + s + "/messages")).get("messages").size());
    }

    @Test
    void an_idempotency_key_replays_and_refuses_another_body() {
        String s = sid();
        HttpResponse<String> first = app.post(
                "/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"once\"}", "Idempotency-Key", "k1");
        HttpResponse<String> again = app.post(
                "/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"once\"}", "Idempotency-Key", "k1");
        assertEquals(first.body(), again.body());
        assertEquals(
                422,
                app.post(
                                "/v1/sessions/" + s + "/messages",
                                "application/json",
                                "{\"text\":\"other\"}",
                                "Idempotency-Key",
                                "k1")
                        .statusCode());
        assertEquals(1, json(app.get("/v1/sessions/" + s)).get("version").asLong());
    }

    @Test
    void timestamps_are_utc_on_the_database_clock_whatever_the_session_time_zone() {
        String s = sid();
        Instant before = Instant.now();
        app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"when\"}");
        Instant created = Instant.parse(json(app.get("/v1/sessions/" + s + "/messages"))
                .get("messages")
                .get(0)
                .get("createdAt")
                .asString());
        assertTrue(
                Duration.between(before, created).abs().compareTo(Duration.ofMinutes(1)) < 0,
                "createdAt " + created + " is not near " + before + ": a time zone leaked into a timestamp");
    }

    @Test
    void another_tenants_session_is_not_found_and_refusals_change_nothing() {
        String s = sid();
        app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"mine\"}");
        HttpResponse<String> created = app.call(
                "POST",
                "/v1/admin/tenants",
                IngestApp.ADMIN_KEY,
                "{\"id\":\"c" + UUID.randomUUID().toString().substring(0, 8) + "\"}");
        assertEquals(201, created.statusCode(), created.body());
        String other = json(created).get("apiKey").get("key").asString();
        assertEquals(404, app.get("/v1/sessions/" + s, other).statusCode());
        String fingerprint = app.fingerprint();
        assertEquals(
                400,
                app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":")
                        .statusCode());
        assertEquals(
                413,
                app.post(
                                "/v1/sessions/" + s + "/messages",
                                "application/json",
                                "{\"text\":\"" + "x".repeat(16_001) + "\"}")
                        .statusCode());
        assertEquals(fingerprint, app.fingerprint());
    }

    @Test
    void policies_turns_retries_ledger_deliveries_and_tenant_administration_answer_on_this_database() {
        String s = sid();
        assertEquals(
                202,
                app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"hi\"}")
                        .statusCode());
        HttpResponse<String> policy = app.call("PUT", "/v1/sessions/" + s, IngestApp.KEY, "{\"policy\":\"enqueue\"}");
        assertEquals(200, policy.statusCode(), policy.body());
        assertEquals("enqueue", json(policy).get("policy").asString());
        assertEquals(
                0, json(app.get("/v1/sessions/" + s + "/turns")).get("turns").size());
        assertEquals(
                409,
                app.call("POST", "/v1/sessions/" + s + "/retry", IngestApp.KEY, null)
                        .statusCode(),
                "nothing failed: nothing to retry");
        assertEquals(
                0,
                json(app.get("/v1/ledger/entries?sessionId=" + s))
                        .get("entries")
                        .size());

        long pk = app.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, s);
        app.jdbc.update("""
                INSERT INTO webhook_delivery (webhook_id, session_id, event_type, endpoint_url, payload, status, attempts,
                                              next_attempt_at, created_at, last_error)
                VALUES (?, ?, 'reply.created', 'https://hooks.example/in', '{}', 'FAILED', 3, UTC_TIMESTAMP(6),
                        UTC_TIMESTAMP(6), 'HTTP 500')""", "msg_" + UUID.randomUUID(), pk);
        app.jdbc.update(
                "INSERT INTO webhook_attempt (delivery_id, attempt_no, started_at, status_code) "
                        + "SELECT id, 3, UTC_TIMESTAMP(6), 500 FROM webhook_delivery WHERE session_id = ?",
                pk);
        JsonNode failed = json(app.get("/v1/webhooks/deliveries?status=failed&sessionId=" + s))
                .get("deliveries");
        assertEquals(1, failed.size(), failed.toString());
        long delivery = failed.get(0).get("id").asLong();
        assertEquals(
                202,
                app.call("POST", "/v1/webhooks/deliveries/" + delivery + "/retry", IngestApp.KEY, null)
                        .statusCode());
        assertEquals(
                "PENDING",
                app.jdbc.queryForObject("SELECT status FROM webhook_delivery WHERE id = ?", String.class, delivery));
        assertEquals(
                409,
                app.call("POST", "/v1/webhooks/deliveries/" + delivery + "/retry", IngestApp.KEY, null)
                        .statusCode());

        String tenant = "c" + UUID.randomUUID().toString().substring(0, 8);
        HttpResponse<String> created =
                app.call("POST", "/v1/admin/tenants", IngestApp.ADMIN_KEY, "{\"id\":\"" + tenant + "\"}");
        assertEquals(201, created.statusCode(), created.body());
        String key = json(created).get("apiKey").get("key").asString();
        HttpResponse<String> renamed = app.call(
                "PATCH",
                "/v1/admin/tenants/" + tenant,
                IngestApp.ADMIN_KEY,
                "{\"name\":\"Renamed\",\"defaultPolicy\":\"reject\"}");
        assertEquals(200, renamed.statusCode(), renamed.body());
        assertEquals(
                "Renamed",
                json(app.call("GET", "/v1/admin/tenants/" + tenant, IngestApp.ADMIN_KEY, null))
                        .get("name")
                        .asString());
        JsonNode keys = json(app.call("GET", "/v1/admin/tenants/" + tenant + "/keys", IngestApp.ADMIN_KEY, null))
                .get("keys");
        assertEquals(1, keys.size(), keys.toString());
        assertEquals(200, app.get("/v1/ledger/entries?sessionId=" + s, key).statusCode());
        assertEquals(
                204,
                app.call(
                                "DELETE",
                                "/v1/admin/tenants/" + tenant + "/keys/"
                                        + keys.get(0).get("keyId").asLong(),
                                IngestApp.ADMIN_KEY,
                                null)
                        .statusCode());
        assertEquals(401, app.get("/v1/ledger/entries?sessionId=" + s, key).statusCode(), "a revoked key is refused");
    }
}
