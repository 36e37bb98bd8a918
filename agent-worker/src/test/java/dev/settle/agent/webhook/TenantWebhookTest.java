package dev.settle.agent.webhook;

import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static dev.settle.agent.webhook.WebhookNode.SECRET;
import static dev.settle.agent.webhook.WebhookNode.SECRET_2;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each tenant's replies go to its own webhook URL, signed with its own secrets only (never the deployment's; none →
 * not sent); the default tenant and tenants without a URL use the settings. Secrets are read on every claim.
 */
class TenantWebhookTest {
    static final Duration LONG = Duration.ofSeconds(30);
    static WebhookReceiver receiver;
    static WebhookNode node;

    @BeforeAll
    static void start() {
        receiver = WebhookReceiver.start();
        // ten attempts over about eight seconds: time for secrets set meanwhile to rescue a delivery
        node = WebhookNode.start(
                "tenanthooks",
                Map.of(
                        "settle.webhook.url",
                        receiver.url(),
                        "settle.webhook.schedule",
                        "0s,300ms,1s,1s,1s,1s,1s,1s,1s,1s"));
    }

    @AfterAll
    static void stop() {
        node.close();
        receiver.close();
    }

    long session(String tenant, String externalId) {
        node.jdbc.update("""
                INSERT INTO chat_session (tenant_id, external_id, version, replied_version, created_at)
                VALUES (?, ?, 1, 1, UTC_TIMESTAMP(6))""", tenant, externalId);
        return node.jdbc.queryForObject(
                "SELECT id FROM chat_session WHERE tenant_id = ? AND external_id = ?", Long.class, tenant, externalId);
    }

    static Outbox.Span span(long session) {
        return new Outbox.Span(session, 1, List.of(), null);
    }

    @Test
    void the_outbox_stamps_the_tenants_endpoint_and_the_sender_signs_with_the_tenants_secrets() {
        receiver.reset();
        node.jdbc.update("""
                INSERT INTO tenant (id, name, webhook_url, webhook_secrets, created_at)
                VALUES ('acme', 'Acme', ?, ?, UTC_TIMESTAMP(6))""", receiver.url() + "/acme", SECRET_2);
        node.jdbc.update("INSERT INTO tenant (id, name, created_at) VALUES ('plain', 'No own hook', UTC_TIMESTAMP(6))");
        long acme = session("acme", "acme-s");
        long plain = session("plain", "plain-s");
        long dflt = session("default", "default-s");
        Outbox outbox = node.bean(Outbox.class);
        outbox.replyCreated(span(acme), "msg_acme", "for acme");
        outbox.replyCreated(span(plain), "msg_plain", "for plain");
        outbox.replyCreated(span(dflt), "msg_default", "for default");

        assertEquals(receiver.url() + "/acme", endpoint(acme));
        assertEquals(receiver.url(), endpoint(plain), "a tenant without its own URL uses the deployment's");
        assertEquals(receiver.url(), endpoint(dflt));
        receiver.awaitAcknowledged(3, LONG);
        for (WebhookReceiver.Delivery d : receiver.deliveries()) {
            boolean isAcme = d.body().contains("for acme");
            assertEquals(isAcme ? "/hooks/acme" : "/hooks", d.path(), d.body());
            assertEquals(isAcme, WebhookReceiver.verify(SECRET_2, d), "acme's secret signs acme's only");
            assertEquals(!isAcme, WebhookReceiver.verify(SECRET, d), "the deployment's secret signs the others");
        }
        assertFalse(receiver.deliveries().isEmpty());
    }

    /** A further tenant secret, 32 bytes. */
    static final String SECRET_3 = "whsec_q3OUsGLOYYIo4YpP5X7cK9oXJ/7Ut8VHRf2kJjJq9sE=";
    /** What the admin API's PATCH of webhookSecrets runs. */
    static final String SET_SECRETS = "UPDATE tenant SET webhook_secrets = ? WHERE id = ?";

    void tenant(String id, String path, String secrets) {
        node.jdbc.update("""
                INSERT INTO tenant (id, name, webhook_url, webhook_secrets, created_at)
                VALUES (?, ?, ?, ?, UTC_TIMESTAMP(6))""", id, id, receiver.url() + path, secrets);
    }

    List<WebhookReceiver.Delivery> at(String path) {
        return receiver.deliveries().stream()
                .filter(d -> d.path().equals("/hooks" + path))
                .toList();
    }

    long delivery(long session, String replyId) {
        return node.jdbc.queryForObject(
                "SELECT id FROM webhook_delivery WHERE session_id = ? AND webhook_id = ?",
                Long.class,
                session,
                "wh_" + replyId);
    }

    @Test
    void a_tenant_without_secrets_gets_nothing_not_even_signed_by_the_deployment_until_it_has_some() {
        tenant("legacy", "/legacy", null);
        long s = session("legacy", "legacy-s");
        node.bean(Outbox.class).replyCreated(span(s), "msg_legacy", "for legacy");
        long id = delivery(s, "msg_legacy");

        // each attempt fails with the reason, nothing sent; the delivery stays pending on its retry schedule
        String reason = "tenant legacy has no webhook signing secret; set its webhookSecrets (admin API); not sent";
        await().atMost(LONG).until(() -> node.attempts(id).size() >= 2);
        for (Map<String, Object> attempt : node.attempts(id)) {
            if (attempt.get("error") != null) { // the last one may still be open
                assertEquals(reason, attempt.get("error"));
                assertNull(attempt.get("status_code"));
            }
        }
        assertEquals("PENDING", node.status(id));
        assertEquals(reason, node.row(id).get("last_error"), "visible in GET /v1/webhooks/deliveries");
        assertTrue(at("/legacy").isEmpty(), "nothing reached the tenant's endpoint: " + at("/legacy"));

        // secrets set meanwhile (as a PATCH does) rescue it at its next attempt, signed with them only
        node.jdbc.update(SET_SECRETS, SECRET_3, "legacy");
        await().atMost(LONG).until(() -> "DELIVERED".equals(node.status(id)));
        List<WebhookReceiver.Delivery> got = at("/legacy");
        assertEquals(1, got.size());
        assertTrue(WebhookReceiver.verify(SECRET_3, got.getFirst()));
        assertFalse(WebhookReceiver.verify(SECRET, got.getFirst()), "never the deployment's secret");
        assertEquals(
                1,
                got.getFirst().webhookSignature().split(" ").length,
                got.getFirst().webhookSignature());
    }

    @Test
    void a_change_of_a_tenants_secrets_signs_its_next_delivery_within_seconds() {
        tenant("rotor", "/rotor", SECRET_2);
        long s = session("rotor", "rotor-s");
        Outbox outbox = node.bean(Outbox.class);
        outbox.replyCreated(span(s), "msg_rotor_1", "first");
        await().atMost(LONG).until(() -> "DELIVERED".equals(node.status(delivery(s, "msg_rotor_1"))));
        assertTrue(WebhookReceiver.verify(SECRET_2, at("/rotor").getFirst()));

        node.jdbc.update(SET_SECRETS, SECRET_3, "rotor");
        outbox.replyCreated(span(s), "msg_rotor_2", "second");
        await().atMost(Duration.ofSeconds(5)).until(() -> at("/rotor").size() == 2);
        WebhookReceiver.Delivery next = at("/rotor").get(1);
        assertEquals("wh_msg_rotor_2", next.webhookId());
        assertTrue(WebhookReceiver.verify(SECRET_3, next), "the new secret verifies");
        assertFalse(WebhookReceiver.verify(SECRET_2, next), "the replaced one no longer does");
        assertFalse(WebhookReceiver.verify(SECRET, next));
    }

    @Test
    void whose_endpoint_decides_whose_secrets_sign() {
        String d = "https://deployment.example/hooks";
        assertEquals("t", DeliveryQueue.owner("t", "https://t.example/a", "https://t.example/a", d));
        assertNull(DeliveryQueue.owner("t", null, d, d), "a tenant without a URL of its own: the deployment's");
        assertNull(DeliveryQueue.owner("t", "https://t.example/a", d, d), "queued before it had one");
        assertEquals(
                "t",
                DeliveryQueue.owner("t", "https://t.example/b", "https://t.example/a", d),
                "its earlier URL is still its own");
        assertEquals("t", DeliveryQueue.owner("t", null, "https://t.example/a", d), "so after clearing it");
        assertEquals("t", DeliveryQueue.owner("t", d, d, d), "a tenant that chose the deployment's URL signs itself");
        assertNull(
                DeliveryQueue.owner("default", null, "https://old.example/hooks", d),
                "the deployment's own tenant: an earlier SETTLE_WEBHOOK_URL");
        assertNull(DeliveryQueue.owner("default", null, "https://old.example/hooks", null));
        assertEquals("default", DeliveryQueue.owner("default", "https://own.example", "https://own.example", d));
    }

    String endpoint(long session) {
        return node.jdbc.queryForObject(
                "SELECT endpoint_url FROM webhook_delivery WHERE session_id = ?", String.class, session);
    }
}
