package dev.settle.agent.webhook;

import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static dev.settle.agent.webhook.WebhookNode.SECRET_2;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A deployment without SETTLE_WEBHOOK_SECRET sends nothing unsigned unless SETTLE_WEBHOOK_ALLOWUNSIGNED=true. */
class WebhookUnsignedTest {
    static final Duration LONG = Duration.ofSeconds(30);
    static WebhookReceiver refusing;
    static WebhookReceiver allowing;
    static WebhookNode strict;
    static WebhookNode lenient;

    @BeforeAll
    static void start() {
        refusing = WebhookReceiver.start();
        allowing = WebhookReceiver.start();
        strict = WebhookNode.start(
                "unsigned-refused",
                Map.of(
                        "settle.webhook.url",
                        refusing.url(),
                        "settle.webhook.secret",
                        "",
                        "settle.webhook.schedule",
                        "0s,200ms,200ms"));
        lenient = WebhookNode.start(
                "unsigned-allowed",
                Map.of(
                        "settle.webhook.url",
                        allowing.url(),
                        "settle.webhook.secret",
                        "",
                        "settle.webhook.allow-unsigned",
                        "true"));
    }

    @AfterAll
    static void stop() {
        strict.close();
        lenient.close();
        refusing.close();
        allowing.close();
    }

    @Test
    void without_a_secret_nothing_is_sent_unsigned_and_each_attempt_says_why() {
        long id = strict.enqueue(strict.session("no-secret"), "no-secret", null, "unsigned?");
        await().atMost(LONG).until(() -> "FAILED".equals(strict.status(id)));
        String reason = "SETTLE_WEBHOOK_SECRET is not set and SETTLE_WEBHOOK_ALLOWUNSIGNED is false: webhooks are not "
                + "sent unsigned; not sent";
        List<Map<String, Object>> attempts = strict.attempts(id);
        assertEquals(3, attempts.size(), attempts.toString());
        for (Map<String, Object> attempt : attempts) {
            assertEquals(reason, attempt.get("error"));
            assertNull(attempt.get("status_code"));
        }
        assertTrue(
                ((String) strict.row(id).get("last_error")).contains(reason),
                strict.row(id).toString());
        assertEquals(List.of(), refusing.deliveries(), "no request reached the receiver");

        // a tenant's own endpoint needs no deployment secret: signed with the tenant's
        strict.jdbc.update("""
                INSERT INTO tenant (id, name, webhook_url, webhook_secrets, created_at)
                VALUES ('own', 'own', ?, ?, UTC_TIMESTAMP(6))""", refusing.url() + "/own", SECRET_2);
        strict.jdbc.update("""
                INSERT INTO chat_session (tenant_id, external_id, version, replied_version, created_at)
                VALUES ('own', 'own-s', 1, 1, UTC_TIMESTAMP(6))""");
        long own = strict.jdbc.queryForObject("SELECT id FROM chat_session WHERE tenant_id = 'own'", Long.class);
        long signed = strict.enqueue(own, "own-s", refusing.url() + "/own", "signed by its tenant");
        await().atMost(LONG).until(() -> "DELIVERED".equals(strict.status(signed)));
        assertEquals(1, refusing.deliveries().size());
        assertTrue(WebhookReceiver.verify(SECRET_2, refusing.deliveries().getFirst()));
    }

    @Test
    void allowed_unsigned_it_is_sent_without_a_signature() {
        long id = lenient.enqueue(lenient.session("allowed"), "allowed", null, "unsigned, as allowed");
        allowing.awaitAcknowledged(1, LONG);
        await().atMost(LONG).until(() -> "DELIVERED".equals(lenient.status(id)));
        WebhookReceiver.Delivery d = allowing.deliveries().getFirst();
        assertEquals(lenient.webhookId(id), d.webhookId());
        assertNull(d.webhookSignature(), "no webhook-signature header");
    }
}
