package dev.settle.agent.webhook;

import dev.settle.agent.Conversation;
import dev.settle.agent.Outbox;
import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static dev.settle.agent.webhook.WebhookNode.SECRET;
import static dev.settle.agent.webhook.WebhookNode.SECRET_2;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Each tenant's replies go to its own webhook URL, signed with its own secrets; the default tenant uses the settings. */
class TenantWebhookTest {
    static final Duration LONG = Duration.ofSeconds(30);
    static WebhookReceiver receiver;
    static WebhookNode node;

    @BeforeAll
    static void start() {
        receiver = WebhookReceiver.start();
        node = WebhookNode.start("tenanthooks", Map.of("settle.webhook.url", receiver.url()));
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
        return node.jdbc.queryForObject("SELECT id FROM chat_session WHERE tenant_id = ? AND external_id = ?",
                Long.class, tenant, externalId);
    }

    static Conversation.Snapshot snapshot(long session) {
        return new Conversation.Snapshot(session, 1, 1, null, List.of(), List.of(), List.of(), null, false);
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
        outbox.replyCreated(acme, "msg_acme", "for acme", snapshot(acme));
        outbox.replyCreated(plain, "msg_plain", "for plain", snapshot(plain));
        outbox.replyCreated(dflt, "msg_default", "for default", snapshot(dflt));

        assertEquals(receiver.url() + "/acme", endpoint(acme));
        assertEquals(receiver.url(), endpoint(plain), "a tenant without its own URL uses the deployment's");
        assertEquals(receiver.url(), endpoint(dflt));
        assertTrue(receiver.awaitAcknowledged(3, LONG));
        for (WebhookReceiver.Delivery d : receiver.deliveries()) {
            boolean isAcme = d.body().contains("for acme");
            assertEquals(isAcme ? "/hooks/acme" : "/hooks", d.path(), d.body());
            assertEquals(isAcme, WebhookReceiver.verify(SECRET_2, d), "acme's secret signs acme's only");
            assertEquals(!isAcme, WebhookReceiver.verify(SECRET, d), "the deployment's secret signs the others");
        }
        assertFalse(receiver.deliveries().isEmpty());
    }

    String endpoint(long session) {
        return node.jdbc.queryForObject("SELECT endpoint_url FROM webhook_delivery WHERE session_id = ?", String.class,
                session);
    }
}
