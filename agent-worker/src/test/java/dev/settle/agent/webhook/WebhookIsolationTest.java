package dev.settle.agent.webhook;

import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.Map;
import java.util.UUID;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * One endpoint hangs (never answers within the 30 s timeout) with more in-flight attempts than a claim batch;
 * a healthy endpoint's 200 deliveries are all acknowledged long before that timeout, while the hanging ones are
 * still waiting.
 */
class WebhookIsolationTest {
    static final int HANGING_SESSIONS = 60;
    static final int HEALTHY_SESSIONS = 50;
    static final int HEALTHY_PER_SESSION = 4;

    @Test
    void a_hanging_endpoint_does_not_delay_a_healthy_one() {
        try (WebhookReceiver hanging = WebhookReceiver.start();
                WebhookReceiver healthy = WebhookReceiver.start();
                WebhookNode node = WebhookNode.start("isolation", Map.of("settle.webhook.timeout", "30s"))) {
            hanging.answerWith(d -> WebhookReceiver.Answer.status(200).delay(Duration.ofMinutes(2)));
            for (int s = 0; s < HANGING_SESSIONS; s++) {
                String external = "hang-" + UUID.randomUUID();
                long pk = node.session(external);
                node.enqueue(pk, external, hanging.url(), "hang " + s);
                node.enqueue(pk, external, hanging.url(), "hang later " + s);
            }
            hanging.awaitDeliveries(HANGING_SESSIONS, Duration.ofSeconds(20));

            long start = System.nanoTime();
            for (int s = 0; s < HEALTHY_SESSIONS; s++) {
                String external = "healthy-" + UUID.randomUUID();
                long pk = node.session(external);
                for (int i = 0; i < HEALTHY_PER_SESSION; i++) {
                    node.enqueue(pk, external, healthy.url(), "healthy " + s + "/" + i);
                }
            }
            int healthyTotal = HEALTHY_SESSIONS * HEALTHY_PER_SESSION;
            healthy.awaitAcknowledged(healthyTotal, Duration.ofSeconds(25));
            Duration took = Duration.ofNanos(System.nanoTime() - start);
            assertTrue(took.compareTo(Duration.ofSeconds(10)) < 0, "healthy endpoint took " + took + " (timeout 30 s)");
            await("healthy rows DELIVERED")
                    .atMost(Duration.ofSeconds(10))
                    .pollInterval(Duration.ofMillis(10))
                    .pollInSameThread()
                    .until(() -> node.count(
                                    "SELECT COUNT(*) FROM webhook_delivery WHERE status = 'DELIVERED' AND endpoint_url = ?",
                                    healthy.url())
                            == healthyTotal);
            // meanwhile the hanging endpoint's first attempts are all still open, and nothing else was sent to it
            assertEquals(HANGING_SESSIONS, hanging.deliveries().size());
            assertEquals(
                    2 * HANGING_SESSIONS,
                    node.count(
                            "SELECT COUNT(*) FROM webhook_delivery WHERE status = 'PENDING' AND endpoint_url = ?",
                            hanging.url()));
            assertEquals(HANGING_SESSIONS, node.count("""
                    SELECT COUNT(*) FROM webhook_attempt a JOIN webhook_delivery d ON d.id = a.delivery_id
                     WHERE d.endpoint_url = ? AND a.status_code IS NULL AND a.error IS NULL""", hanging.url()));
        }
    }
}
