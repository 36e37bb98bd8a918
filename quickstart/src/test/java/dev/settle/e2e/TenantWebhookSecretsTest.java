package dev.settle.e2e;

import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.security.SecureRandom;
import java.time.Duration;
import java.util.Base64;
import java.util.List;
import java.util.Map;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Through the admin API, end to end: a tenant's replies are signed with its own secret (generated when its URL is
 * set without one), never with the deployment's; a PATCH of its secrets signs its next reply within seconds; a
 * tenant without secrets gets nothing, and GET /v1/webhooks/deliveries says why.
 */
class TenantWebhookSecretsTest {
    static final String ADMIN = "e2e-admin-key";
    static final Duration SOON = Duration.ofSeconds(20);
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final HttpClient HTTP = HttpClient.newHttpClient();
    static SettleSystem settle;

    @BeforeAll
    static void start() {
        settle = new SettleSystem("tenantsecrets", true, Map.of("settle.admin-key", ADMIN));
    }

    @AfterAll
    static void stop() {
        settle.close();
    }

    static HttpResponse<String> call(String method, String path, String key, String body) {
        try {
            return HTTP.send(
                    HttpRequest.newBuilder(URI.create(settle.baseUrl() + path))
                            .header("Authorization", "Bearer " + key)
                            .header("Content-Type", "application/json")
                            .method(
                                    method,
                                    body == null
                                            ? HttpRequest.BodyPublishers.noBody()
                                            : HttpRequest.BodyPublishers.ofString(body))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static JsonNode ok(int status, HttpResponse<String> r) {
        assertEquals(status, r.statusCode(), r.body());
        return JSON.readTree(r.body());
    }

    /** Creates a tenant; returns its API key. */
    static String tenant(String id) {
        return ok(201, call("POST", "/v1/admin/tenants", ADMIN, "{\"id\":\"" + id + "\"}"))
                .get("apiKey")
                .get("key")
                .asString();
    }

    static String say(String key, String text) {
        String s = SettleSystem.newSessionId();
        ok(202, call("POST", "/v1/sessions/" + s + "/messages", key, "{\"text\":\"" + text + "\"}"));
        return s;
    }

    static List<WebhookReceiver.Delivery> at(String tenant) {
        return settle.receiver.deliveries().stream()
                .filter(d -> d.path().equals("/hooks/" + tenant))
                .toList();
    }

    static WebhookReceiver.Delivery deliveredFor(String tenant, String session) {
        await().atMost(SOON).until(() -> settle.webhooks(session).size() == 1);
        WebhookReceiver.Delivery d = settle.webhooks(session).getFirst();
        assertEquals("/hooks/" + tenant, d.path());
        return d;
    }

    static String secretOf(int n) {
        byte[] key = new byte[n];
        new SecureRandom().nextBytes(key);
        return "whsec_" + Base64.getEncoder().encodeToString(key);
    }

    @Test
    void a_url_set_without_a_secret_gets_one_shown_once_that_signs_and_a_patch_rotates_it_within_seconds() {
        String key = tenant("acme");
        JsonNode patched = ok(
                200,
                call(
                        "PATCH",
                        "/v1/admin/tenants/acme",
                        ADMIN,
                        "{\"webhookUrl\":\"" + settle.receiver.url() + "/acme\"}"));
        String generated = patched.get("webhookSecret").asString();
        assertTrue(generated.startsWith("whsec_"), generated);
        JsonNode view = ok(200, call("GET", "/v1/admin/tenants/acme", ADMIN, null));
        assertEquals(1, view.get("webhookSecrets").asInt());
        assertFalse(view.has("webhookSecret"), "shown once");

        WebhookReceiver.Delivery first = deliveredFor("acme", say(key, "hello acme"));
        assertTrue(WebhookReceiver.verify(generated, first), "the generated secret verifies");
        assertFalse(WebhookReceiver.verify(SettleSystem.SECRET, first), "the deployment's does not");

        String rotated = secretOf(32);
        ok(200, call("PATCH", "/v1/admin/tenants/acme", ADMIN, "{\"webhookSecrets\":\"" + rotated + "\"}"));
        WebhookReceiver.Delivery next = deliveredFor("acme", say(key, "hello again"));
        assertTrue(WebhookReceiver.verify(rotated, next), "the new secret verifies the next reply, no restart");
        assertFalse(WebhookReceiver.verify(generated, next), "the replaced one does not");
        assertFalse(WebhookReceiver.verify(SettleSystem.SECRET, next));
    }

    @Test
    void a_tenant_url_without_secrets_is_not_sent_says_why_and_a_replay_after_setting_them_delivers() {
        String key = tenant("legacy");
        ok(
                200,
                call(
                        "PATCH",
                        "/v1/admin/tenants/legacy",
                        ADMIN,
                        "{\"webhookUrl\":\"" + settle.receiver.url() + "/legacy\"}"));
        // a tenant URL without secrets, as a row written outside the API may be (the API never leaves one so)
        settle.jdbc.update("UPDATE tenant SET webhook_secrets = NULL WHERE id = 'legacy'");

        String s = say(key, "hello legacy");
        String reason = "tenant legacy has no webhook signing secret; set its webhookSecrets (admin API); not sent";
        await().atMost(SOON).until(() -> {
            JsonNode d = ok(200, call("GET", "/v1/webhooks/deliveries?status=failed", key, null))
                    .get("deliveries");
            return d.size() == 1 && d.get(0).get("lastError").asString().contains(reason);
        });
        JsonNode dead = ok(200, call("GET", "/v1/webhooks/deliveries?status=failed", key, null))
                .get("deliveries")
                .get(0);
        assertEquals(s, dead.get("sessionId").asString());
        assertTrue(at("legacy").isEmpty(), "nothing reached the endpoint, signed by the deployment or unsigned");

        String secret = secretOf(32);
        ok(200, call("PATCH", "/v1/admin/tenants/legacy", ADMIN, "{\"webhookSecrets\":[\"" + secret + "\"]}"));
        assertEquals(
                202,
                call("POST", "/v1/webhooks/deliveries/" + dead.get("id").asLong() + "/retry", key, null)
                        .statusCode());
        WebhookReceiver.Delivery d = deliveredFor("legacy", s);
        assertTrue(WebhookReceiver.verify(secret, d));
        assertFalse(WebhookReceiver.verify(SettleSystem.SECRET, d));
    }
}
