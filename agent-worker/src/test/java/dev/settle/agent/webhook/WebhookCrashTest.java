package dev.settle.agent.webhook;

import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.Test;

import java.sql.Timestamp;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
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

            await("delivered by the survivor")
                    .atMost(Duration.ofSeconds(20))
                    .pollInterval(Duration.ofMillis(10))
                    .pollInSameThread()
                    .until(() -> "DELIVERED".equals(node.status(id)));
            assertEquals(1, receiver.deliveries().size());
            assertEquals(node.webhookId(id), receiver.deliveries().getFirst().webhookId());
            assertTrue(
                    node.count(
                                    "SELECT COUNT(*) FROM webhook_delivery WHERE id = ? AND delivered_at > ?",
                                    id,
                                    claimedUntil)
                            == 1,
                    "not before the dead dispatcher's claim expired");
            Map<String, Object> row = node.row(id);
            assertEquals(2, row.get("attempts"));
            List<Map<String, Object>> attempts = node.attempts(id);
            assertEquals(2, attempts.size());
            assertNull(attempts.get(0).get("status_code"));
            assertEquals(
                    "abandoned: its dispatcher stopped or lost the claim before recording an outcome",
                    attempts.get(0).get("error"));
            assertEquals(200, attempts.get(1).get("status_code"));
            assertNull(attempts.get(1).get("error"));

            // the dead dispatcher wakes up and reports: its own attempt row is corrected, the delivery is untouched
            assertTrue(!node.bean(DeliveryQueue.class)
                    .finish(dead, 500, 1000, "HTTP 500", new AttemptVerdict.Retry(Duration.ZERO, 500, "HTTP 500")));
            assertEquals("DELIVERED", node.status(id));
            assertEquals(500, node.attempts(id).get(0).get("status_code"));
        }
    }

    @Test
    void a_handed_back_attempt_uses_one_step_of_the_schedule_and_is_always_followed_by_one_more() {
        try (WebhookNode node = WebhookNode.start("crash-steps", Map.of("settle.webhook.schedule", "0s,0s,0s"))) {
            node.bean(WebhookDispatcher.class).stop(); // this test is the dispatcher
            DeliveryQueue queue = node.bean(DeliveryQueue.class);
            RetrySchedule schedule = node.bean(RetrySchedule.class);
            long id = node.enqueue(node.session("crash-3"), "crash-3", "http://127.0.0.1:9/hooks", "steps");
            WebhookSender.Result failed = new WebhookSender.Result(500, null, 1000, true, null, null, null, null);
            WebhookSender.Result stopped =
                    new WebhookSender.Result(null, WebhookSender.INTERRUPTED, 1000, true, null, null, null, null);

            DeliveryQueue.Claim first = queue.claim(id, Duration.ofSeconds(30), null);
            assertEquals(1, first.attemptInRound());
            assertTrue(queue.finish(
                    first,
                    null,
                    1000,
                    WebhookSender.INTERRUPTED,
                    AttemptVerdict.of(stopped, first.attemptInRound(), schedule, Duration.ofHours(1), Instant.now())));
            DeliveryQueue.Claim second = queue.claim(id, Duration.ofSeconds(30), null);
            assertNotNull(second, "handed back: due at once");
            assertEquals(2, second.attemptInRound(), "the handed-back attempt counted");
            assertTrue(queue.finish(
                    second,
                    500,
                    1000,
                    "HTTP 500",
                    AttemptVerdict.of(failed, second.attemptInRound(), schedule, Duration.ofHours(1), Instant.now())));
            DeliveryQueue.Claim third = queue.claim(id, Duration.ofSeconds(30), null);
            assertEquals(3, third.attemptInRound());
            // the schedule's last attempt is handed back: one more attempt follows all the same
            AttemptVerdict released = AttemptVerdict.of(stopped, 3, schedule, Duration.ofHours(1), Instant.now());
            assertInstanceOf(AttemptVerdict.Released.class, released);
            assertTrue(queue.finish(third, null, 1000, WebhookSender.INTERRUPTED, released));
            DeliveryQueue.Claim fourth = queue.claim(id, Duration.ofSeconds(30), null);
            assertNotNull(fourth);
            assertEquals(4, fourth.attemptInRound());
            AttemptVerdict last = AttemptVerdict.of(failed, 4, schedule, Duration.ofHours(1), Instant.now());
            assertEquals(
                    new AttemptVerdict.Failed(500, "exhausted: 4 attempts failed, the last with HTTP 500", false),
                    last);
            assertTrue(queue.finish(fourth, 500, 1000, "HTTP 500", last));
            assertEquals("FAILED", node.status(id));
            assertEquals(4, node.row(id).get("attempts"));
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
            receiver.awaitDeliveries(1, Duration.ofSeconds(20));
            b.bean(WebhookDispatcher.class).start();
            long stopping = System.nanoTime();
            a.close(); // a clean shutdown: the attempt is interrupted after a short grace and handed back

            await("delivered by b")
                    .atMost(Duration.ofSeconds(20))
                    .pollInterval(Duration.ofMillis(10))
                    .pollInSameThread()
                    .until(() -> "DELIVERED".equals(b.status(id)));
            Duration took = Duration.ofNanos(System.nanoTime() - stopping);
            assertTrue(took.compareTo(Duration.ofSeconds(20)) < 0, "no wait for the 30 s claim to expire: " + took);
            receiver.awaitAcknowledged(1, Duration.ofSeconds(5)); // the re-send's answer recorded (the first is held)
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
