package dev.settle.agent.webhook;

import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.Test;

import java.sql.Timestamp;
import java.time.Duration;
import java.util.List;
import java.util.Map;

import static dev.settle.agent.webhook.WebhookNode.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** A dispatcher that dies mid-attempt loses nothing: its claim expires, or it hands the claim back on stop. */
class WebhookCrashTest {

    @Test
    void an_attempt_claimed_and_abandoned_without_an_outcome_is_taken_over_after_its_claim_expires() {
        try (WebhookReceiver receiver = WebhookReceiver.start();
             WebhookNode node = WebhookNode.start("crash-claim", Map.of())) {
            WebhookDispatcher survivor = node.bean(WebhookDispatcher.class);
            survivor.stop();
            long id = node.enqueue(node.session("crash-1"), "crash-1", receiver.url(), "abandoned");
            // a dispatcher claims the attempt for 1 s and dies: no POST, no outcome, nothing handed back
            DeliveryQueue.Claim dead = node.bean(DeliveryQueue.class).claim(id, Duration.ofSeconds(1), null);
            assertNotNull(dead);
            Timestamp claimedUntil = node.jdbc.queryForObject(
                    "SELECT claimed_until FROM webhook_delivery WHERE id = ?", Timestamp.class, id);
            survivor.start();

            await("delivered by the survivor", Duration.ofSeconds(20), () -> "DELIVERED".equals(node.status(id)));
            assertEquals(1, receiver.deliveries().size());
            assertEquals(node.webhookId(id), receiver.deliveries().getFirst().webhookId());
            assertTrue(node.count("SELECT COUNT(*) FROM webhook_delivery WHERE id = ? AND delivered_at > ?", id,
                    claimedUntil) == 1, "not before the dead dispatcher's claim expired");
            Map<String, Object> row = node.row(id);
            assertEquals(2, row.get("attempts"));
            List<Map<String, Object>> attempts = node.attempts(id);
            assertEquals(2, attempts.size());
            assertNull(attempts.get(0).get("status_code"));
            assertEquals("abandoned: its dispatcher stopped or lost the claim before recording an outcome",
                    attempts.get(0).get("error"));
            assertEquals(200, attempts.get(1).get("status_code"));
            assertNull(attempts.get(1).get("error"));

            // the dead dispatcher wakes up and reports: its own attempt row is corrected, the delivery is untouched
            assertTrue(!node.bean(DeliveryQueue.class).finish(dead, 500, 1000, "HTTP 500",
                    new AttemptVerdict.Retry(Duration.ZERO, 500, "HTTP 500")));
            assertEquals("DELIVERED", node.status(id));
            assertEquals(500, node.attempts(id).get(0).get("status_code"));
        }
    }

    @Test
    void a_worker_stopped_while_the_receiver_holds_the_request_hands_the_attempt_back_to_another() {
        try (WebhookReceiver receiver = WebhookReceiver.start();
             WebhookNode a = WebhookNode.start("crash-stop", Map.of("settle.webhook.url", receiver.url()));
             WebhookNode b = new WebhookNode(a.database, Map.of("settle.webhook.url", receiver.url()))) {
            b.bean(WebhookDispatcher.class).stop();
            receiver.answerWith(d -> receiver.deliveries().size() == 1
                    ? WebhookReceiver.Answer.status(200).delay(Duration.ofMinutes(2))
                    : WebhookReceiver.Answer.status(200));
            long id = a.enqueue(a.session("crash-2"), "crash-2", null, "held");
            assertTrue(receiver.awaitDeliveries(1, Duration.ofSeconds(20)), "a's attempt is on the wire");
            b.bean(WebhookDispatcher.class).start();
            long stopping = System.nanoTime();
            a.close(); // a clean shutdown: the attempt is interrupted after a short grace and handed back

            await("delivered by b", Duration.ofSeconds(20), () -> "DELIVERED".equals(b.status(id)));
            Duration took = Duration.ofNanos(System.nanoTime() - stopping);
            assertTrue(took.compareTo(Duration.ofSeconds(20)) < 0, "no wait for the 30 s claim to expire: " + took);
            List<WebhookReceiver.Delivery> all = receiver.deliveries();
            assertEquals(2, all.size(), "at least once: the held request and the retry");
            assertEquals(all.get(0).webhookId(), all.get(1).webhookId());
            assertTrue(all.get(1).acknowledged());
            List<Map<String, Object>> attempts = b.attempts(id);
            assertEquals(2, attempts.size());
            assertEquals(WebhookSender.INTERRUPTED, attempts.get(0).get("error"));
            assertEquals(200, attempts.get(1).get("status_code"));
            assertEquals(2, b.row(id).get("attempts"));
        }
    }
}
