package dev.settle.agent.webhook;

import dev.settle.testsupport.SharedInfra;
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
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Signatures verified by the standardwebhooks library in the receiver, with one secret and during rotation. */
class WebhookSignatureTest {
    static final Duration LONG = Duration.ofSeconds(20);
    static final String WRONG = "whsec_" + "A".repeat(32);
    static WebhookReceiver receiver;
    static WebhookNode oneSecret;
    static WebhookNode twoSecrets;

    @BeforeAll
    static void start() {
        receiver = WebhookReceiver.start();
        // a retry gap of at least 1.4 s × 0.8 = 1.12 s (jitter): the second attempt falls in a later second
        oneSecret = WebhookNode.start(
                "sig1", Map.of("settle.webhook.url", receiver.url(), "settle.webhook.schedule", "0s,1400ms"));
        // rotation: the old and the new secret, space separated, both sign every attempt
        twoSecrets = new WebhookNode(
                SharedInfra.newDatabase("sig2"),
                Map.of("settle.webhook.url", receiver.url(), "settle.webhook.secret", SECRET + " " + SECRET_2));
    }

    @AfterAll
    static void stop() {
        oneSecret.close();
        twoSecrets.close();
        receiver.close();
    }

    @Test
    void one_secret_signs_every_attempt_with_a_stable_id_and_a_per_attempt_timestamp() {
        receiver.reset();
        long session = oneSecret.session("sig-one");
        long id = oneSecret.enqueue(session, "sig-one", null, "signed once");
        receiver.answerWith(
                d -> WebhookReceiver.Answer.status(receiver.deliveries().size() == 1 ? 500 : 200));
        receiver.awaitAcknowledged(1, LONG);
        List<WebhookReceiver.Delivery> all = receiver.deliveries();
        assertEquals(2, all.size());
        for (WebhookReceiver.Delivery d : all) {
            assertEquals(oneSecret.webhookId(id), d.webhookId(), "webhook-id is the delivery's, on every attempt");
            assertEquals(1, d.webhookSignature().split(" ").length, d.webhookSignature());
            assertTrue(d.webhookSignature().startsWith("v1,"), d.webhookSignature());
            assertTrue(WebhookReceiver.verify(SECRET, d), "the library verifies it with the secret");
            assertFalse(WebhookReceiver.verify(SECRET_2, d), "another secret does not");
            assertFalse(WebhookReceiver.verify(WRONG, d));
            assertEquals("application/json", d.headers().get("content-type").getFirst());
        }
        long first = Long.parseLong(all.get(0).webhookTimestamp());
        long second = Long.parseLong(all.get(1).webhookTimestamp());
        assertTrue(second > first, "webhook-timestamp is per attempt: " + first + " then " + second);
        // each attempt's timestamp is the database clock when that attempt was claimed and opened
        List<Long> startedMicros = oneSecret.jdbc.queryForList("""
                SELECT TIMESTAMPDIFF(MICROSECOND, '1970-01-01 00:00:00', started_at) FROM webhook_attempt
                 WHERE delivery_id = ? ORDER BY attempt_no""", Long.class, id);
        assertEquals(2, startedMicros.size());
        for (int i = 0; i < 2; i++) {
            long ts = Long.parseLong(all.get(i).webhookTimestamp());
            long started = startedMicros.get(i);
            assertTrue(
                    ts * 1_000_000 <= started && started < (ts + 2) * 1_000_000,
                    "attempt " + (i + 1) + ": webhook-timestamp " + ts + ", started at " + started + " µs");
        }
        assertTrue(startedMicros.get(1) - startedMicros.get(0) >= 1_120_000, "the retry gap: " + startedMicros);
        await("delivered")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(10))
                .pollInSameThread()
                .until(() -> "DELIVERED".equals(oneSecret.status(id)));
        // the row was queued without an endpoint: the claim stamped the configured one on it
        assertEquals(receiver.url(), oneSecret.row(id).get("endpoint_url"));
    }

    @Test
    void during_rotation_each_secret_alone_verifies() {
        receiver.reset();
        long session = twoSecrets.session("sig-two");
        twoSecrets.enqueue(session, "sig-two", receiver.url(), "signed twice");
        receiver.awaitAcknowledged(1, LONG);
        WebhookReceiver.Delivery d = receiver.deliveries().getFirst();
        String[] signatures = d.webhookSignature().split(" ");
        assertEquals(2, signatures.length, d.webhookSignature());
        assertTrue(WebhookReceiver.verify(SECRET, d), "the old secret alone verifies");
        assertTrue(WebhookReceiver.verify(SECRET_2, d), "the new secret alone verifies");
        assertFalse(WebhookReceiver.verify(WRONG, d));
        // and each signature on its own is the one of its secret
        assertTrue(WebhookReceiver.verify(SECRET, withSignature(d, signatures[0])));
        assertFalse(WebhookReceiver.verify(SECRET_2, withSignature(d, signatures[0])));
        assertTrue(WebhookReceiver.verify(SECRET_2, withSignature(d, signatures[1])));
    }

    static WebhookReceiver.Delivery withSignature(WebhookReceiver.Delivery d, String signature) {
        return new WebhookReceiver.Delivery(
                d.path(),
                d.webhookId(),
                d.webhookTimestamp(),
                signature,
                d.body(),
                d.json(),
                d.headers(),
                d.status(),
                d.receivedAt());
    }
}
