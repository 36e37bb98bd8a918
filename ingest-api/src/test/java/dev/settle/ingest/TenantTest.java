package dev.settle.ingest;

import dev.settle.ingest.http.Sha256;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpResponse;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

class TenantTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static IngestApp app;

    @BeforeAll
    static void start() {
        app = new IngestApp("tenants");
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    static JsonNode json(HttpResponse<String> r) {
        return JSON.readTree(r.body());
    }

    static String tid() {
        return "t" + UUID.randomUUID().toString().substring(0, 8);
    }

    /** Creates a tenant; returns its first key. */
    static String tenant(String id, String extraJson) {
        HttpResponse<String> r = app.call(
                "POST",
                "/v1/admin/tenants",
                IngestApp.ADMIN_KEY,
                "{\"id\":\"" + id + "\",\"name\":\"Tenant " + id + "\"" + extraJson + "}");
        assertEquals(201, r.statusCode(), r.body());
        return json(r).get("apiKey").get("key").asString();
    }

    static HttpResponse<String> postMessage(String key, String session, String text) {
        return app.call("POST", "/v1/sessions/" + session + "/messages", key, "{\"text\":\"" + text + "\"}");
    }

    @Test
    void another_tenants_session_is_not_found_exactly_like_a_missing_one() {
        String a = tenant(tid(), "");
        String b = tenant(tid(), "");
        String s = "shared-" + UUID.randomUUID();
        assertEquals(202, postMessage(a, s, "hello from a").statusCode());

        // the event stream of such an id waits for the caller's own session: EventStreamBeforeSessionTest
        for (String suffix : new String[] {"", "/messages", "/turns"}) {
            HttpResponse<String> other = app.get("/v1/sessions/" + s + suffix, b);
            HttpResponse<String> missing = app.get("/v1/sessions/" + s + "-nope" + suffix, b);
            assertEquals(404, other.statusCode(), suffix + ": " + other.body());
            assertEquals(404, missing.statusCode());
            assertEquals(json(missing).get("type"), json(other).get("type"));
            assertEquals(json(missing).get("title"), json(other).get("title"));
            assertEquals(200, app.get("/v1/sessions/" + s + suffix, a).statusCode());
        }
        assertEquals(
                404, app.get("/v1/sessions/" + s, IngestApp.KEY).statusCode(), "the default tenant is a tenant too");
        assertEquals(
                404, app.call("POST", "/v1/sessions/" + s + "/retry", b, null).statusCode());
        assertEquals(
                "{\"entries\":[],\"next\":null}",
                app.get("/v1/ledger/entries?sessionId=" + s, b).body());

        // the same id in tenant b is b's own session, starting at version 1
        HttpResponse<String> mine = postMessage(b, s, "hello from b");
        assertEquals(1, json(mine).get("version").asLong());
        assertEquals(1, json(app.get("/v1/sessions/" + s, a)).get("version").asLong());
        assertEquals(
                1,
                json(app.get("/v1/sessions/" + s + "/messages", b))
                        .get("messages")
                        .size());
        assertEquals(
                "hello from b",
                json(app.get("/v1/sessions/" + s + "/messages", b))
                        .get("messages")
                        .get(0)
                        .get("text")
                        .asString());
    }

    @Test
    void the_single_key_of_the_deployment_is_the_default_tenant() {
        String s = "default-" + UUID.randomUUID();
        assertEquals(202, postMessage(IngestApp.KEY, s, "hi").statusCode());
        assertEquals(
                "default",
                app.jdbc.queryForObject("SELECT tenant_id FROM chat_session WHERE external_id = ?", String.class, s));
        assertEquals(200, app.get("/v1/sessions/" + s).statusCode());
    }

    @Test
    void keys_are_stored_only_as_hashes_shown_once_and_revocable() {
        String id = tid();
        String first = tenant(id, "");
        assertTrue(first.startsWith("sk_") && first.length() > 40, first);
        assertEquals(
                0,
                app.jdbc.queryForObject(
                        "SELECT COUNT(*) FROM api_key WHERE key_hash = ? OR prefix = ?", Integer.class, first, first));
        assertEquals(
                1,
                app.jdbc.queryForObject(
                        "SELECT COUNT(*) FROM api_key WHERE key_hash = ?", Integer.class, Sha256.hex(first)));

        HttpResponse<String> issued = app.call("POST", "/v1/admin/tenants/" + id + "/keys", IngestApp.ADMIN_KEY, null);
        assertEquals(201, issued.statusCode(), issued.body());
        String second = json(issued).get("key").asString();
        assertNotEquals(first, second);

        JsonNode keys = json(app.get("/v1/admin/tenants/" + id + "/keys", IngestApp.ADMIN_KEY))
                .get("keys");
        assertEquals(2, keys.size());
        assertFalse(keys.toString().contains(first.substring(12)), "a listing never shows a key");
        long firstId = keys.get(0).get("keyId").asLong();

        String s = "rev-" + UUID.randomUUID();
        assertEquals(202, postMessage(first, s, "before").statusCode());
        assertEquals(
                204,
                app.call("DELETE", "/v1/admin/tenants/" + id + "/keys/" + firstId, IngestApp.ADMIN_KEY, null)
                        .statusCode());
        assertEquals(401, postMessage(first, s, "after").statusCode());
        assertEquals(200, app.get("/v1/sessions/" + s, second).statusCode(), "the other key still works");
        assertEquals(
                409,
                app.call("DELETE", "/v1/admin/tenants/" + id + "/keys/" + firstId, IngestApp.ADMIN_KEY, null)
                        .statusCode());
        assertEquals(
                404,
                app.call("DELETE", "/v1/admin/tenants/" + id + "/keys/999999", IngestApp.ADMIN_KEY, null)
                        .statusCode());
    }

    @Test
    void the_admin_api_takes_only_the_admin_key() {
        String key = tenant(tid(), "");
        for (String k : new String[] {key, IngestApp.KEY, "nope"}) {
            assertEquals(401, app.get("/v1/admin/tenants", k).statusCode());
        }
        assertEquals(401, app.call("GET", "/v1/admin/tenants", null, null).statusCode());
        assertEquals(
                401, app.get("/v1/sessions/x", IngestApp.ADMIN_KEY).statusCode(), "the admin key is no tenant key");
        assertEquals(200, app.get("/v1/admin/tenants", IngestApp.ADMIN_KEY).statusCode());
        // each 401 says what the route needs
        org.assertj.core.api.Assertions.assertThat(
                        app.call("GET", "/v1/admin/tenants", null, null).body())
                .contains("missing Authorization: Bearer <admin key>");
        org.assertj.core.api.Assertions.assertThat(
                        app.get("/v1/admin/tenants", IngestApp.KEY).body())
                .contains("this route needs the admin key");
        org.assertj.core.api.Assertions.assertThat(
                        app.get("/v1/sessions/x", IngestApp.ADMIN_KEY).body())
                .contains("this route needs a tenant's API key");
        org.assertj.core.api.Assertions.assertThat(
                        app.call("GET", "/v1/sessions/x", null, null).body())
                .contains("missing Authorization: Bearer <key>");
    }

    @Test
    void tenant_settings_are_validated_listed_updated_and_secrets_never_shown() {
        String id = tid();
        String secret = secretOf(32);
        tenant(
                id,
                ",\"webhookUrl\":\"https://hooks.example.com/settle\",\"webhookSecrets\":\"" + secret
                        + "\",\"defaultPolicy\":\"enqueue\"");
        HttpResponse<String> one = app.get("/v1/admin/tenants/" + id, IngestApp.ADMIN_KEY);
        assertEquals(200, one.statusCode());
        assertEquals(
                "https://hooks.example.com/settle", json(one).get("webhookUrl").asString());
        assertEquals(1, json(one).get("webhookSecrets").asInt());
        assertEquals("enqueue", json(one).get("defaultPolicy").asString());
        assertFalse(one.body().contains(secret));
        assertFalse(app.get("/v1/admin/tenants", IngestApp.ADMIN_KEY).body().contains(secret));

        HttpResponse<String> patched = app.call(
                "PATCH",
                "/v1/admin/tenants/" + id,
                IngestApp.ADMIN_KEY,
                "{\"defaultPolicy\":\"reject\",\"webhookUrl\":null}");
        assertEquals(200, patched.statusCode(), patched.body());
        assertEquals("reject", json(patched).get("defaultPolicy").asString());
        assertTrue(json(patched).get("webhookUrl").isNull());
        assertEquals(1, json(patched).get("webhookSecrets").asInt());

        assertEquals(
                409,
                app.call("POST", "/v1/admin/tenants", IngestApp.ADMIN_KEY, "{\"id\":\"" + id + "\"}")
                        .statusCode());
        assertEquals(
                409,
                app.call("POST", "/v1/admin/tenants", IngestApp.ADMIN_KEY, "{\"id\":\"default\"}")
                        .statusCode());
        for (String bad : new String[] {
            "{\"id\":\"UPPER\"}",
            "{\"webhookUrl\":\"ftp://x\"}",
            "{\"webhookUrl\":\"/relative\"}",
            "{\"defaultPolicy\":\"drop\"}",
            "{\"name\":\"\"}",
            "{\"nope\":1}",
            "[]",
            "{\"name\":5}",
            "{"
        }) {
            assertEquals(
                    400,
                    app.call("POST", "/v1/admin/tenants", IngestApp.ADMIN_KEY, bad)
                            .statusCode(),
                    bad);
        }
        for (String bad : new String[] {
            "{\"webhookSecrets\":\"plain\"}",
            "{\"webhookSecrets\":5}",
            "{\"webhookSecrets\":[5]}",
            "{\"webhookSecrets\":[]}",
            "{\"webhookSecrets\":\"whsec_***\"}"
        }) {
            assertEquals(
                    422,
                    app.call("POST", "/v1/admin/tenants", IngestApp.ADMIN_KEY, bad)
                            .statusCode(),
                    bad);
        }
        assertEquals(
                404,
                app.get("/v1/admin/tenants/no-such-tenant", IngestApp.ADMIN_KEY).statusCode());
        assertEquals(
                404,
                app.call("PATCH", "/v1/admin/tenants/no-such-tenant", IngestApp.ADMIN_KEY, "{\"name\":\"x\"}")
                        .statusCode());
    }

    /** whsec_ + the standard base64 of {@code n} random bytes. */
    static String secretOf(int n) {
        byte[] key = new byte[n];
        new java.security.SecureRandom().nextBytes(key);
        return "whsec_" + java.util.Base64.getEncoder().encodeToString(key);
    }

    static String stored(String id) {
        return app.jdbc.queryForObject("SELECT webhook_secrets FROM tenant WHERE id = ?", String.class, id);
    }

    static void assertInvalidSecrets(HttpResponse<String> r) {
        assertEquals(422, r.statusCode(), r.body());
        assertEquals(
                "application/problem+json",
                r.headers().firstValue("Content-Type").orElse(""));
        assertEquals(
                "https://settle.dev/problems/invalid-webhookSecrets",
                json(r).get("type").asString());
    }

    @Test
    void setting_a_webhook_url_without_a_secret_generates_one_shown_once() {
        String id = tid();
        tenant(id, "");
        HttpResponse<String> patched = app.call(
                "PATCH",
                "/v1/admin/tenants/" + id,
                IngestApp.ADMIN_KEY,
                "{\"webhookUrl\":\"https://hooks.example.com/" + id + "\"}");
        assertEquals(200, patched.statusCode(), patched.body());
        String generated = json(patched).get("webhookSecret").asString();
        assertTrue(generated.startsWith("whsec_"), generated);
        assertEquals(32, java.util.Base64.getDecoder().decode(generated.substring(6)).length);
        assertEquals(1, json(patched).get("webhookSecrets").asInt());
        assertEquals(generated, stored(id), "it is the tenant's signing secret");

        HttpResponse<String> one = app.get("/v1/admin/tenants/" + id, IngestApp.ADMIN_KEY);
        assertEquals(1, json(one).get("webhookSecrets").asInt());
        assertFalse(json(one).has("webhookSecret"));
        assertFalse(one.body().contains(generated.substring(6)), "shown once, never again");
        assertFalse(app.get("/v1/admin/tenants", IngestApp.ADMIN_KEY).body().contains(generated.substring(6)));

        // a tenant that has a secret keeps it: a new URL generates nothing
        HttpResponse<String> moved = app.call(
                "PATCH",
                "/v1/admin/tenants/" + id,
                IngestApp.ADMIN_KEY,
                "{\"webhookUrl\":\"https://hooks.example.com/moved\"}");
        assertEquals(200, moved.statusCode(), moved.body());
        assertFalse(json(moved).has("webhookSecret"), moved.body());
        assertEquals(generated, stored(id));

        // created with a URL and no secret: the same, in the creation's answer
        String other = tid();
        HttpResponse<String> created = app.call(
                "POST",
                "/v1/admin/tenants",
                IngestApp.ADMIN_KEY,
                "{\"id\":\"" + other + "\",\"webhookUrl\":\"https://hooks.example.com/x\"}");
        assertEquals(201, created.statusCode(), created.body());
        assertEquals(stored(other), json(created).get("webhookSecret").asString());
        assertEquals(1, json(created).get("webhookSecrets").asInt());
        // created with its own secret: nothing generated
        String mine = secretOf(24);
        HttpResponse<String> own = app.call(
                "POST",
                "/v1/admin/tenants",
                IngestApp.ADMIN_KEY,
                "{\"webhookUrl\":\"https://hooks.example.com/y\",\"webhookSecrets\":[\"" + mine + "\"]}");
        assertEquals(201, own.statusCode(), own.body());
        assertFalse(json(own).has("webhookSecret"));
        assertEquals(mine, stored(json(own).get("tenantId").asString()));
    }

    @Test
    void secrets_outside_24_to_64_bytes_are_refused_with_422_and_nothing_changes() {
        String id = tid();
        String secret = secretOf(32);
        tenant(id, ",\"webhookUrl\":\"https://hooks.example.com/settle\",\"webhookSecrets\":\"" + secret + "\"");
        String before = app.get("/v1/admin/tenants/" + id, IngestApp.ADMIN_KEY).body();
        for (int n : new int[] {16, 23, 65}) {
            assertInvalidSecrets(app.call(
                    "PATCH",
                    "/v1/admin/tenants/" + id,
                    IngestApp.ADMIN_KEY,
                    "{\"name\":\"renamed\",\"webhookSecrets\":\"" + secretOf(n) + "\"}"));
            // one bad secret among good ones refuses them all
            assertInvalidSecrets(app.call(
                    "PATCH",
                    "/v1/admin/tenants/" + id,
                    IngestApp.ADMIN_KEY,
                    "{\"webhookSecrets\":[\"" + secretOf(32) + "\",\"" + secretOf(n) + "\"]}"));
            String other = tid();
            assertInvalidSecrets(app.call(
                    "POST",
                    "/v1/admin/tenants",
                    IngestApp.ADMIN_KEY,
                    "{\"id\":\"" + other + "\",\"webhookSecrets\":\"" + secretOf(n) + "\"}"));
            assertEquals(
                    404,
                    app.get("/v1/admin/tenants/" + other, IngestApp.ADMIN_KEY).statusCode(),
                    "not created");
        }
        // removing the secrets of a tenant that has a URL would leave its deliveries unsigned: refused too
        assertInvalidSecrets(app.call(
                "PATCH",
                "/v1/admin/tenants/" + id,
                IngestApp.ADMIN_KEY,
                "{\"name\":\"renamed\",\"webhookSecrets\":null}"));
        assertEquals(
                before, app.get("/v1/admin/tenants/" + id, IngestApp.ADMIN_KEY).body(), "nothing changed");
        assertEquals(secret, stored(id));

        // the bounds themselves are fine, and so is rotation (two secrets), and clearing both together
        String low = secretOf(24);
        String high = secretOf(64);
        HttpResponse<String> rotated = app.call(
                "PATCH",
                "/v1/admin/tenants/" + id,
                IngestApp.ADMIN_KEY,
                "{\"webhookSecrets\":\"" + low + " " + high + "\"}");
        assertEquals(200, rotated.statusCode(), rotated.body());
        assertEquals(2, json(rotated).get("webhookSecrets").asInt());
        assertEquals(low + " " + high, stored(id));
        HttpResponse<String> cleared = app.call(
                "PATCH",
                "/v1/admin/tenants/" + id,
                IngestApp.ADMIN_KEY,
                "{\"webhookUrl\":null,\"webhookSecrets\":null}");
        assertEquals(200, cleared.statusCode(), cleared.body());
        assertEquals(0, json(cleared).get("webhookSecrets").asInt());
    }

    @Test
    void a_tenants_default_policy_applies_to_its_sessions_that_set_none() {
        String key = tenant(tid(), ",\"defaultPolicy\":\"reject\"");
        String s = "pol-" + UUID.randomUUID();
        assertEquals(202, postMessage(key, s, "first").statusCode());
        assertEquals(
                "reject", json(app.get("/v1/sessions/" + s, key)).get("policy").asString());
        assertEquals(
                409, postMessage(key, s, "second while the first is unanswered").statusCode());
        assertEquals(
                "merge",
                json(app.call("PUT", "/v1/sessions/" + s, key, "{\"policy\":\"merge\"}"))
                        .get("policy")
                        .asString());
        assertEquals(202, postMessage(key, s, "now merged").statusCode());
    }
}
