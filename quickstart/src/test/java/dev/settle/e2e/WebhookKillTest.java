package dev.settle.e2e;

import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static dev.settle.e2e.SettleSystem.sleep;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A dispatcher killed (SIGKILL, its own JVM: no shutdown hook, no hand-back) while its POST is
 * on the wire. The receiver holds that request; another dispatcher re-sends the delivery, with the same
 * webhook-id, once the dead one's claim has expired.
 *
 * <p>The victim is also the only agent while it answers, in another process than the ingest API (as in
 * production): the session's event stream, read with a disconnect and a Last-Event-ID reconnect, carries each of
 * its deltas exactly once, and they make up the committed reply ("nothing streamed is lost": the stream comes
 * from the database).
 */
class WebhookKillTest {
    /** A claim lasts timeout + margin: 10 s + 2 s here (15 s + 15 s by default). */
    static final Map<String, Object> SHORT_CLAIM =
            Map.of("settle.webhook.timeout", "10s", "settle.webhook.claim-margin", "2s");

    @Test
    void a_dispatcher_killed_while_its_post_is_held_is_re_sent_by_another_with_the_same_webhook_id() throws Exception {
        try (SettleSystem settle = new SettleSystem("webhook-kill", false, SHORT_CLAIM)) {
            String s = SettleSystem.newSessionId();
            // the first request is held (never answered while the victim lives); every later one is acknowledged
            settle.receiver.answerWith(d -> settle.receiver.deliveries().size() == 1
                    ? WebhookReceiver.Answer.status(200).delay(Duration.ofMinutes(5))
                    : WebhookReceiver.Answer.status(200));

            Map<String, Object> props = new HashMap<>(settle.sharedProperties());
            props.put("spring.kafka.consumer.group-id", settle.agentGroup());
            props.put("logging.file.name", "");
            try (AgentProcess victim = new AgentProcess(props)) {
                await("the victim agent joined the group")
                        .atMost(Duration.ofSeconds(90))
                        .pollInterval(Duration.ofMillis(20))
                        .pollInSameThread()
                        .until(() -> victim.logContains("partitions assigned"));
                String reply = StreamingTest.words("from another process", 60);
                settle.model.respondWith(r -> r.body().contains(s)
                        ? ModelResponse.text(reply).chunkSize(5).chunkDelay(Duration.ofMillis(25))
                        : ModelDouble.echo(r));
                settle.post(s, "deliver me " + s);
                assertStreamedExactlyOnceAcrossAReconnect(settle, s, reply);
                await("the victim's POST is on the wire")
                        .atMost(Duration.ofSeconds(60))
                        .pollInterval(Duration.ofMillis(20))
                        .pollInSameThread()
                        .until(() -> settle.allDeliveries(s).size() == 1);
                victim.kill();
                assertFalse(victim.alive());
            }

            // killed mid-attempt: claimed, its attempt open, no outcome, nothing handed back
            Map<String, Object> row = settle.jdbc.queryForMap("""
                    SELECT d.id, d.webhook_id, d.status, d.attempts,
                           DATE_FORMAT(d.claimed_until, '%Y-%m-%d %H:%i:%s.%f') AS claimed_until
                      FROM webhook_delivery d
                      JOIN chat_session s ON s.id = d.session_id WHERE s.external_id = ?""", s);
            long id = ((Number) row.get("id")).longValue();
            String webhookId = (String) row.get("webhook_id");
            String claimedUntil = (String) row.get("claimed_until"); // as text: exact to the microsecond
            assertEquals("PENDING", row.get("status"));
            assertEquals(1, ((Number) row.get("attempts")).intValue());
            assertNotNull(claimedUntil, "the dead dispatcher's claim is still on the row");
            List<Map<String, Object>> open = attempts(settle, id);
            assertEquals(1, open.size());
            assertNull(open.getFirst().get("status_code"), "no outcome: the POST was in flight when it died");
            assertNull(open.getFirst().get("error"), "no outcome: the POST was in flight when it died");

            ConfigurableApplicationContext survivor = settle.startAgent();
            await("re-sent by the survivor and acknowledged")
                    .atMost(Duration.ofSeconds(90))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> settle.webhooks(s).size() == 1);
            await("recorded DELIVERED")
                    .atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> "DELIVERED".equals(status(settle, id)));
            sleep(Duration.ofSeconds(1)); // nothing else follows

            List<WebhookReceiver.Delivery> all = settle.allDeliveries(s);
            assertEquals(2, all.size(), "the held request and the re-send: " + all);
            assertEquals(webhookId, all.get(0).webhookId());
            assertEquals(webhookId, all.get(1).webhookId(), "the same webhook-id on both attempts");
            assertFalse(all.get(0).acknowledged(), "the held request was never answered with a 2xx");
            assertTrue(all.get(1).acknowledged());
            assertEquals(1, settle.webhooks(s).size(), "exactly one acknowledged delivery");
            assertEquals(all.get(0).body(), all.get(1).body(), "the same body");
            assertTrue(WebhookReceiver.verify(SettleSystem.SECRET, all.get(1)));
            assertEquals(
                    1,
                    settle.jdbc.queryForObject(
                            "SELECT COUNT(*) FROM webhook_delivery WHERE id = ? AND delivered_at > CAST(? AS DATETIME(6))",
                            Integer.class,
                            id,
                            claimedUntil),
                    "not re-sent before the dead dispatcher's claim expired");

            Map<String, Object> done = settle.jdbc.queryForMap(
                    "SELECT status, attempts, last_status FROM webhook_delivery WHERE id = ?", id);
            assertEquals("DELIVERED", done.get("status"));
            assertEquals(2, ((Number) done.get("attempts")).intValue());
            assertEquals(200, ((Number) done.get("last_status")).intValue());
            List<Map<String, Object>> attempts = attempts(settle, id);
            assertEquals(2, attempts.size());
            assertNull(attempts.get(0).get("status_code"));
            assertEquals(
                    "abandoned: its dispatcher stopped or lost the claim before recording an outcome",
                    attempts.get(0).get("error"));
            assertEquals(200, ((Number) attempts.get(1).get("status_code")).intValue());
            assertNull(attempts.get(1).get("error"));
            settle.launcher.stop(survivor);
        }
    }

    /** Reads the session's events until a few deltas, disconnects, reconnects with Last-Event-ID until the reply. */
    static void assertStreamedExactlyOnceAcrossAReconnect(SettleSystem settle, String s, String reply)
            throws Exception {
        String url = settle.baseUrl() + "/v1/sessions/" + s + "/events";
        List<SseClient.Event> first = SseClient.read(
                url,
                SettleSystem.KEY,
                null,
                e -> e.type().equals("reply.delta") && e.data().get("seq").asInt() >= 5);
        List<SseClient.Event> all = new ArrayList<>(first);
        all.addAll(SseClient.read(
                url, SettleSystem.KEY, first.getLast().id(), e -> e.type().equals("reply.created")));
        String deltas = SseClient.deltasExactlyOnce(all);
        assertEquals(
                List.of("message.accepted", "turn.started"),
                all.subList(0, 2).stream().map(SseClient.Event::type).toList());
        assertEquals(reply, deltas);
        assertEquals(reply, all.getLast().data().get("text").asString());
        assertEquals(reply, settle.jdbc.queryForObject("""
                SELECT m.text FROM chat_message m JOIN chat_session s ON s.id = m.session_id
                 WHERE s.external_id = ? AND m.role = 'assistant'""", String.class, s));
    }

    static List<Map<String, Object>> attempts(SettleSystem settle, long deliveryId) {
        return settle.jdbc.queryForList("""
                SELECT attempt_no, status_code, error FROM webhook_attempt WHERE delivery_id = ?
                 ORDER BY attempt_no""", deliveryId);
    }

    static String status(SettleSystem settle, long deliveryId) {
        return settle.jdbc.queryForObject("SELECT status FROM webhook_delivery WHERE id = ?", String.class, deliveryId);
    }
}
