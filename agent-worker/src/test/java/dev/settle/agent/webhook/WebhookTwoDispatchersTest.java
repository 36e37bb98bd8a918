package dev.settle.agent.webhook;

import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.Collectors;

import static dev.settle.agent.webhook.WebhookNode.sleep;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Two dispatcher instances (two agent workers) on one outbox of 1,000 replies over 100 sessions: the receiver
 * sees each webhook-id exactly once, and each session's replies arrive in delivery order. The outbox rows are
 * written straight into webhook_delivery (the dispatchers are the subject here, not the reply commit, which the
 * e2e tests drive through the real {@code ReplyCommit}/{@code Outbox}); their payloads are minimal.
 */
class WebhookTwoDispatchersTest {
    static final int SESSIONS = 100;
    static final int PER_SESSION = 10;

    @Test
    void one_thousand_replies_are_each_delivered_exactly_once_in_per_session_order() {
        try (WebhookReceiver receiver = WebhookReceiver.start();
                WebhookNode a = WebhookNode.start("two-dispatchers", Map.of("settle.webhook.url", receiver.url()));
                WebhookNode b = new WebhookNode(a.database, Map.of("settle.webhook.url", receiver.url()))) {
            List<Long> sessions = new ArrayList<>();
            List<String> externals = new ArrayList<>();
            for (int s = 0; s < SESSIONS; s++) {
                String external = "two-" + s + "-" + UUID.randomUUID();
                externals.add(external);
                sessions.add(a.session(external));
            }
            // interleaved across sessions, as concurrent turns would commit them; half with no endpoint stamped
            List<Object[]> rows = new ArrayList<>();
            for (int i = 0; i < PER_SESSION; i++) {
                for (int s = 0; s < SESSIONS; s++) {
                    String webhookId = "wh_two_" + s + "_" + i;
                    rows.add(new Object[] {
                        webhookId,
                        sessions.get(s),
                        (s + i) % 2 == 0 ? receiver.url() : null,
                        "{\"type\":\"reply.created\",\"data\":{\"sessionId\":\"" + externals.get(s) + "\",\"n\":" + i
                                + "}}"
                    });
                }
            }
            a.jdbc.batchUpdate("""
                    INSERT INTO webhook_delivery (webhook_id, session_id, event_type, endpoint_url, payload, status,
                                                  next_attempt_at, created_at)
                    VALUES (?, ?, 'reply.created', ?, ?, 'PENDING', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))""", rows);
            int total = SESSIONS * PER_SESSION;
            long started = System.nanoTime();

            await("all delivered")
                    .atMost(Duration.ofSeconds(120))
                    .pollInterval(Duration.ofMillis(10))
                    .pollInSameThread()
                    .until(() -> a.count("SELECT COUNT(*) FROM webhook_delivery WHERE status = 'DELIVERED'") == total);
            System.out.printf(
                    "1000 deliveries by two dispatchers in %d ms%n", (System.nanoTime() - started) / 1_000_000);
            sleep(Duration.ofMillis(500));

            List<WebhookReceiver.Delivery> received = receiver.deliveries();
            Map<String, Long> perId = received.stream()
                    .collect(Collectors.groupingBy(WebhookReceiver.Delivery::webhookId, Collectors.counting()));
            assertEquals(total, perId.size(), "every webhook-id arrived");
            assertTrue(perId.values().stream().allMatch(n -> n == 1), "none twice");
            assertEquals(total, received.size());
            assertEquals(total, receiver.acknowledged().size());
            assertEquals(total, a.count("SELECT COUNT(*) FROM webhook_attempt WHERE status_code = 200"));
            assertEquals(total, a.count("SELECT SUM(attempts) FROM webhook_delivery"));

            Map<String, Long> idOf = new HashMap<>();
            a.jdbc.query("SELECT webhook_id, id FROM webhook_delivery", rs -> {
                idOf.put(rs.getString(1), rs.getLong(2));
            });
            Map<String, List<Long>> arrivalsPerSession = new HashMap<>();
            for (WebhookReceiver.Delivery d : received) {
                arrivalsPerSession
                        .computeIfAbsent(d.json().get("data").get("sessionId").asString(), k -> new ArrayList<>())
                        .add(idOf.get(d.webhookId()));
            }
            assertEquals(SESSIONS, arrivalsPerSession.size());
            for (Map.Entry<String, List<Long>> e : arrivalsPerSession.entrySet()) {
                List<Long> sorted = e.getValue().stream().sorted().toList();
                assertEquals(sorted, e.getValue(), "arrival order of session " + e.getKey());
                assertEquals(PER_SESSION, e.getValue().size());
            }
            long byA = a.bean(WebhookDispatcher.class).claimedAttempts();
            long byB = b.bean(WebhookDispatcher.class).claimedAttempts();
            assertEquals(total, byA + byB, "claims: " + byA + " + " + byB);
            assertTrue(byA > 0 && byB > 0, "both instances dispatched: " + byA + " + " + byB);
        }
    }
}
