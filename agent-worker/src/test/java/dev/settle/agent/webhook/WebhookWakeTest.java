package dev.settle.agent.webhook;

import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A dispatcher that never polls on its own (poll interval 1 h) still sends everything its instance makes due: a
 * delivery written by a commit of its own (the commit's {@link OutboxWritten}), a failed attempt's retry at the time
 * it was scheduled for, and a reply queued behind an earlier one of its session as soon as that one ends.
 */
class WebhookWakeTest {
    static final Map<String, Object> NO_POLLING = Map.of("settle.webhook.poll-interval", "1h");

    @Test
    void a_retry_goes_out_when_it_is_due() {
        try (WebhookReceiver receiver = WebhookReceiver.start();
                WebhookNode node = WebhookNode.start("wake-retry", with("settle.webhook.schedule", "0s,300ms"))) {
            receiver.answerSequence(500);
            long session = node.session("wake-retry");
            long id = node.enqueue(session, "wake-retry", receiver.url(), "retried");
            committed(node, session);
            awaitDelivered(node, id);
            receiver.awaitAnswered(Duration.ofSeconds(5));
            List<WebhookReceiver.Delivery> all = receiver.deliveries();
            assertEquals(
                    List.of(500, 200),
                    all.stream().map(WebhookReceiver.Delivery::status).toList());
            long gap = Duration.between(all.get(0).receivedAt(), all.get(1).receivedAt())
                    .toMillis();
            assertTrue(gap >= 300 * (1 - RetrySchedule.JITTER) - 5, "not before its jittered delay: " + gap + " ms");
        }
    }

    @Test
    void replies_queued_behind_their_sessions_first_go_out_as_each_one_before_them_ends() {
        try (WebhookReceiver receiver = WebhookReceiver.start();
                WebhookNode node = WebhookNode.start("wake-order", NO_POLLING)) {
            AtomicInteger answered = new AtomicInteger();
            // the first is answered slowly, so that the others are queued while it is in flight
            receiver.answerWith(d -> WebhookReceiver.Answer.status(200)
                    .delay(answered.getAndIncrement() == 0 ? Duration.ofMillis(500) : Duration.ZERO));
            long session = node.session("wake-order");
            long first = node.enqueue(session, "wake-order", receiver.url(), "first");
            committed(node, session);
            receiver.awaitDeliveries(1, Duration.ofSeconds(10));
            long second = node.enqueue(session, "wake-order", receiver.url(), "second");
            committed(node, session);
            long third = node.enqueue(session, "wake-order", receiver.url(), "third");
            committed(node, session);
            awaitDelivered(node, third);
            assertEquals(List.of("DELIVERED", "DELIVERED"), List.of(node.status(first), node.status(second)));
            assertEquals(
                    List.of(node.webhookId(first), node.webhookId(second), node.webhookId(third)),
                    receiver.deliveries().stream()
                            .map(WebhookReceiver.Delivery::webhookId)
                            .toList(),
                    "each once, in the session's order");
        }
    }

    private static Map<String, Object> with(String key, String value) {
        return Map.of("settle.webhook.poll-interval", "1h", key, value);
    }

    /** What the reply commit publishes for a delivery it could not claim at once. */
    private static void committed(WebhookNode node, long session) {
        node.context.publishEvent(new OutboxWritten(session, null));
    }

    private static void awaitDelivered(WebhookNode node, long id) {
        await("delivery " + id + " DELIVERED")
                .atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> "DELIVERED".equals(node.status(id)));
    }
}
