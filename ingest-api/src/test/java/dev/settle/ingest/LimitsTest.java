package dev.settle.ingest;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpResponse;
import java.util.Map;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The limits, each a problem+json: 100 unanswered messages per session (429 + Retry-After, nothing stored), and a
 * per-tenant request rate (429 + Retry-After) that leaves other tenants alone, and typing signals their own bucket.
 * Each bucket here holds 150 requests and refills one every 1000 s, so the test controls exactly when it runs dry.
 */
class LimitsTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static IngestApp app;

    @BeforeAll
    static void start() {
        app = new IngestApp(
                "limits",
                Map.of(
                        "settle.limits.rate",
                        "0.001",
                        "settle.limits.burst",
                        "150",
                        "settle.limits.unanswered-retry-after",
                        "7s"));
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    @Test
    void the_101st_unanswered_message_is_refused_then_the_tenant_runs_out_of_requests() {
        String s = "full-" + UUID.randomUUID();
        for (int i = 1; i <= 100; i++) {
            HttpResponse<String> r =
                    app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"m" + i + "\"}");
            assertEquals(202, r.statusCode(), r.body());
        }
        String before = app.fingerprint();
        HttpResponse<String> refused =
                app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"one too many\"}");
        assertEquals(429, refused.statusCode(), refused.body());
        assertEquals("7", refused.headers().firstValue("Retry-After").orElse(""));
        assertEquals(
                "application/problem+json",
                refused.headers().firstValue("Content-Type").orElse("").split(";")[0]);
        assertTrue(refused.body().contains("too-many-unanswered"), refused.body());
        assertEquals(before, app.fingerprint(), "nothing stored, the version bump rolled back");
        assertEquals(
                100,
                JSON.readTree(app.get("/v1/sessions/" + s).body())
                        .get("version")
                        .asLong());

        assertTrue(refused.body().contains("retry when it has answered"), refused.body());

        // a session whose last turn failed is answered by nothing until a retry: the refusal says so, not "wait"
        app.jdbc.update("UPDATE chat_session SET failed_version = version WHERE external_id = ?", s);
        String failedBefore = app.fingerprint();
        HttpResponse<String> failed =
                app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"still there?\"}");
        assertEquals(429, failed.statusCode(), failed.body());
        assertTrue(failed.body().contains("too-many-unanswered"), failed.body());
        assertTrue(failed.body().contains("its last turn failed: POST /v1/sessions/{sessionId}/retry"), failed.body());
        assertEquals(failedBefore, app.fingerprint(), "nothing stored");
        app.jdbc.update("UPDATE chat_session SET failed_version = 0 WHERE external_id = ?", s);

        // answering frees the session: one more fits again
        app.jdbc.update("UPDATE chat_session SET replied_version = 1 WHERE external_id = ?", s);
        assertEquals(
                202,
                app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"fits\"}")
                        .statusCode());

        // another tenant has its own bucket
        HttpResponse<String> created = app.call("POST", "/v1/admin/tenants", IngestApp.ADMIN_KEY, "{\"id\":\"other\"}");
        String other = JSON.readTree(created.body()).get("apiKey").get("key").asString();

        // 104 requests so far (100 + refused + read + refused after the failure + fits); the default tenant's bucket of
        // 150 runs dry
        int ok = 0;
        HttpResponse<String> limited = null;
        for (int i = 0; i < 60 && limited == null; i++) {
            HttpResponse<String> r = app.get("/v1/sessions/" + s);
            if (r.statusCode() == 429) {
                limited = r;
            } else {
                ok++;
            }
        }
        assertTrue(limited != null, "the rate limit never hit");
        assertEquals(46, ok, "exactly the rest of the burst passed");
        assertTrue(limited.body().contains("rate-limited"), limited.body());
        assertTrue(Long.parseLong(limited.headers().firstValue("Retry-After").orElse("0")) > 100);
        assertEquals(
                "application/problem+json",
                limited.headers().firstValue("Content-Type").orElse("").split(";")[0]);
        assertEquals(404, app.get("/v1/sessions/" + s, other).statusCode(), "another tenant is not limited");

        // typing signals have a bucket of their own: the tenant's spent requests leave them alone, and theirs run dry
        // without touching the requests' (none of which refill meanwhile)
        String typing = "/v1/sessions/" + s + "/typing";
        int typed = 0;
        HttpResponse<String> typingLimited = null;
        for (int i = 0; i < 200 && typingLimited == null; i++) {
            HttpResponse<String> r = app.post(typing, null, null);
            if (r.statusCode() == 429) {
                typingLimited = r;
            } else {
                assertEquals(202, r.statusCode(), r.body());
                typed++;
            }
        }
        assertEquals(150, typed, "the whole typing burst passed although the requests' bucket is empty");
        assertTrue(typingLimited.body().contains("typing-signal rate is exhausted"), typingLimited.body());
        assertTrue(
                app.get("/v1/sessions/" + s).body().contains("request rate is exhausted"),
                "the requests' bucket is still empty");
    }
}
