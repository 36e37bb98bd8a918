package dev.settle.e2e;

import dev.settle.quickstart.SettleLauncher;
import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Dead letters and replay end to end: a receiver answering 410 disables the endpoint, the next reply is failed
 * without being sent, both show in GET /v1/webhooks/deliveries, and an operator retry delivers each with its
 * webhook-id and re-enables the endpoint.
 */
class WebhookReplayTest {
    static final Duration LONG = Duration.ofSeconds(30);
    static SettleSystem settle;
    static final HttpClient HTTP = HttpClient.newHttpClient();

    @BeforeAll
    static void start() {
        settle = new SettleSystem("replay");
    }

    @AfterAll
    static void stop() {
        settle.close();
    }

    static HttpResponse<String> retry(long id) throws Exception {
        return HTTP.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + SettleLauncher.port(settle.ingest)
                                + "/v1/webhooks/deliveries/" + id + "/retry"))
                        .header("Authorization", "Bearer " + SettleSystem.KEY)
                        .POST(HttpRequest.BodyPublishers.noBody())
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    static String status(String sessionId) {
        JsonNode list =
                settle.get("/v1/webhooks/deliveries?sessionId=" + sessionId).get("deliveries");
        return list.isEmpty() ? null : list.get(0).get("status").asString();
    }

    static JsonNode onlyDelivery(String sessionId) {
        JsonNode list =
                settle.get("/v1/webhooks/deliveries?sessionId=" + sessionId).get("deliveries");
        assertEquals(1, list.size(), list.toString());
        return list.get(0);
    }

    @Test
    void gone_endpoint_dead_letters_and_operator_retries_deliver_them_and_re_enable_it() throws Exception {
        settle.receiver.answerWith(d -> WebhookReceiver.Answer.status(410));
        String first = SettleSystem.newSessionId();
        settle.post(first, "replay one " + first);
        await("first dead")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> "failed".equals(status(first)));
        JsonNode dead = onlyDelivery(first);
        assertEquals(410, dead.get("lastStatus").asInt());
        assertEquals(1, settle.receiver.deliveries().size());
        assertNotNull(settle.jdbc.queryForObject(
                "SELECT disabled_at FROM webhook_endpoint WHERE url = ?",
                java.sql.Timestamp.class,
                settle.receiver.url()));

        String second = SettleSystem.newSessionId();
        settle.post(second, "replay two " + second);
        await("second dead")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> "failed".equals(status(second)));
        JsonNode parked = onlyDelivery(second);
        assertTrue(parked.get("lastError").asString().startsWith("endpoint disabled since "), parked.toString());
        assertEquals(1, settle.receiver.deliveries().size(), "nothing sent to the disabled endpoint");
        JsonNode failedList =
                settle.get("/v1/webhooks/deliveries?status=failed").get("deliveries");
        assertEquals(
                List.of(parked.get("id").asLong(), dead.get("id").asLong()),
                List.of(
                        failedList.get(0).get("id").asLong(),
                        failedList.get(1).get("id").asLong()));
        assertEquals(
                2,
                settle.jdbc.queryForObject(
                        "SELECT COUNT(*) FROM session_event WHERE type = 'delivery.exhausted'", Integer.class));
        // and a client of the session's event stream reads it
        List<SseClient.Event> events = assertTimeoutPreemptively(
                LONG,
                () -> SseClient.read(
                        settle.baseUrl() + "/v1/sessions/" + first + "/events",
                        SettleSystem.KEY,
                        null,
                        e -> e.type().equals("delivery.exhausted")));
        SseClient.Event exhausted = events.getLast();
        assertEquals("delivery.exhausted", exhausted.type());
        assertEquals(
                1,
                events.stream()
                        .filter(e -> e.type().equals("delivery.exhausted"))
                        .count());
        assertTrue(events.stream().anyMatch(e -> e.type().equals("reply.created")), "after the reply it was about");
        assertEquals(dead.get("id").asLong(), exhausted.data().get("deliveryId").asLong());
        assertEquals(
                dead.get("webhookId").asString(),
                exhausted.data().get("webhookId").asString());
        assertEquals("reply.created", exhausted.data().get("eventType").asString());
        assertEquals(1, exhausted.data().get("attempts").asInt());
        assertEquals(410, exhausted.data().get("lastStatus").asInt());
        assertEquals(
                dead.get("lastError").asString(), exhausted.data().get("reason").asString());

        // the receiver is back: the operator retries the first dead letter
        settle.receiver.answerWith(d -> WebhookReceiver.Answer.status(200));
        HttpResponse<String> r = retry(dead.get("id").asLong());
        assertEquals(202, r.statusCode(), r.body());
        await("first delivered")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> "delivered".equals(status(first)));
        List<WebhookReceiver.Delivery> acked = settle.webhooks(first);
        assertEquals(1, acked.size());
        assertEquals(dead.get("webhookId").asString(), acked.getFirst().webhookId(), "same webhook-id");
        assertTrue(WebhookReceiver.verify(SettleSystem.SECRET, acked.getFirst()));
        JsonNode history = onlyDelivery(first).get("history");
        assertEquals(2, history.size());
        assertEquals(410, history.get(0).get("statusCode").asInt());
        assertEquals(200, history.get(1).get("statusCode").asInt());
        assertNull(
                settle.jdbc.queryForObject(
                        "SELECT disabled_at FROM webhook_endpoint WHERE url = ?",
                        java.sql.Timestamp.class,
                        settle.receiver.url()),
                "its 2xx re-enabled the endpoint");

        assertEquals(202, retry(parked.get("id").asLong()).statusCode());
        await("second delivered")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(second).size() == 1);
        assertEquals(409, retry(parked.get("id").asLong()).statusCode());

        String third = SettleSystem.newSessionId();
        settle.post(third, "replay three " + third);
        await("a new reply goes out normally")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(third).size() == 1);
    }
}
