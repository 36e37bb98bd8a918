package dev.settle.agent.webhook;

import dev.settle.testsupport.WebhookReceiver;
import dev.settle.testsupport.WebhookReceiver.Answer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.time.Duration;
import java.time.ZoneOffset;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static dev.settle.agent.webhook.WebhookNode.sleep;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Each kind of answer handled exactly as documented: attempt counts, final status, last error, the endpoint's
 * state, and no attempt after the end. Schedule 0s,200ms,400ms (3 attempts), timeout 4 s (generous: the machine is loaded), Retry-After cap 2.5 s.
 */
class WebhookStatusHandlingTest {
    static final Duration LONG = Duration.ofSeconds(20);
    /** Longer than the whole schedule with jitter: nothing more may arrive after it. */
    static final Duration QUIET = Duration.ofMillis(1200);
    /** Poll interval, claim, HTTP, on a loaded 2-core machine. */
    static final long SLACK_MS = 700;

    static WebhookNode node;

    @BeforeAll
    static void start() {
        node = WebhookNode.start(
                "status", Map.of("settle.webhook.timeout", "4s", "settle.webhook.max-retry-after", "2500ms"));
    }

    @AfterAll
    static void stop() {
        node.close();
    }

    long enqueue(WebhookReceiver receiver, String text) {
        String external = "status-" + UUID.randomUUID();
        return node.enqueue(node.session(external), external, receiver.url(), text);
    }

    void awaitFinal(long id) {
        await("delivery " + id + " final")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(10))
                .pollInSameThread()
                .until(() -> !"PENDING".equals(node.status(id)));
    }

    static long gapMillis(List<WebhookReceiver.Delivery> all, int i) {
        return Duration.between(all.get(i - 1).receivedAt(), all.get(i).receivedAt())
                .toMillis();
    }

    @ParameterizedTest
    @ValueSource(ints = {200, 201, 202, 204})
    void any_2xx_is_delivered_on_the_first_attempt(int status) {
        try (WebhookReceiver receiver = WebhookReceiver.start()) {
            receiver.answerSequence(status);
            long id = enqueue(receiver, "ok " + status);
            awaitFinal(id);
            assertEquals("DELIVERED", node.status(id));
            Map<String, Object> row = node.row(id);
            assertEquals(1, row.get("attempts"));
            assertEquals(status, row.get("last_status"));
            assertNull(row.get("last_error"));
            assertNotNull(row.get("delivered_at"));
            assertEquals(1, receiver.deliveries().size());
            assertEquals(status, node.attempts(id).getFirst().get("status_code"));
        }
    }

    @Test
    void http_500_is_retried_until_the_schedule_is_exhausted_then_failed_with_an_exhausted_event() {
        try (WebhookReceiver receiver = WebhookReceiver.start()) {
            receiver.answerWith(d -> Answer.status(500));
            long id = enqueue(receiver, "always 500");
            awaitFinal(id);
            sleep(QUIET);
            assertEquals(3, receiver.deliveries().size(), "3 attempts, then none");
            Map<String, Object> row = node.row(id);
            assertEquals("FAILED", row.get("status"));
            assertEquals(3, row.get("attempts"));
            assertEquals(500, row.get("last_status"));
            assertEquals("exhausted: 3 attempts failed, the last with HTTP 500", row.get("last_error"));
            List<Map<String, Object>> attempts = node.attempts(id);
            assertEquals(
                    List.of(1, 2, 3),
                    attempts.stream().map(a -> a.get("attempt_no")).toList());
            assertEquals(
                    List.of(500, 500, 500),
                    attempts.stream().map(a -> a.get("status_code")).toList());
            assertEquals("HTTP 500", attempts.getFirst().get("error"));

            Map<String, Object> event = node.jdbc.queryForMap("""
                    SELECT e.* FROM session_event e JOIN webhook_delivery d ON d.session_id = e.session_id
                     WHERE d.id = ? AND e.type = 'delivery.exhausted'""", id);
            JsonNode payload = JsonMapper.shared().readTree((String) event.get("data"));
            assertEquals(id, payload.get("deliveryId").asLong());
            assertEquals(node.webhookId(id), payload.get("webhookId").asString());
            assertEquals(3, payload.get("attempts").asInt());
            assertEquals(500, payload.get("lastStatus").asInt());
            assertEquals(
                    "exhausted: 3 attempts failed, the last with HTTP 500",
                    payload.get("reason").asString());
        }
    }

    @Test
    void no_answer_within_the_timeout_is_a_failed_attempt() {
        try (WebhookReceiver receiver = WebhookReceiver.start()) {
            receiver.answerWith(d -> Answer.status(200).delay(Duration.ofSeconds(10)));
            long id = enqueue(receiver, "too slow");
            awaitFinal(id);
            sleep(QUIET);
            assertEquals(3, receiver.deliveries().size());
            Map<String, Object> row = node.row(id);
            assertEquals("FAILED", row.get("status"));
            assertEquals(3, row.get("attempts"));
            assertNull(row.get("last_status"));
            assertEquals(
                    "exhausted: 3 attempts failed, the last with timeout: no complete answer within 4000 ms",
                    row.get("last_error"));
            for (Map<String, Object> a : node.attempts(id)) {
                assertNull(a.get("status_code"));
                assertEquals("timeout: no complete answer within 4000 ms", a.get("error"));
                long latency = ((Number) a.get("latency_ms")).longValue();
                assertTrue(latency >= 4000 && latency < 4000 + 3000, "latency " + latency);
            }
        }
    }

    @ParameterizedTest
    @ValueSource(ints = {301, 302, 303, 307, 308})
    void a_redirect_is_a_failed_attempt_and_is_never_followed(int status) {
        try (WebhookReceiver receiver = WebhookReceiver.start()) {
            String elsewhere = receiver.url().replace("/hooks", "/elsewhere");
            receiver.answerWith(d -> Answer.status(status).header("Location", elsewhere));
            long id = enqueue(receiver, "redirected " + status);
            awaitFinal(id);
            sleep(QUIET);
            assertEquals(3, receiver.deliveries().size());
            assertTrue(receiver.deliveries().stream().allMatch(d -> d.path().equals("/hooks")), "never followed");
            Map<String, Object> row = node.row(id);
            assertEquals("FAILED", row.get("status"));
            assertEquals(3, row.get("attempts"));
            assertEquals(status, row.get("last_status"));
            assertEquals(
                    "exhausted: 3 attempts failed, the last with HTTP " + status
                            + " (redirects are not followed; Location: " + elsewhere + ")",
                    row.get("last_error"));
        }
    }

    @Test
    void http_429_with_retry_after_seconds_waits_that_long_instead_of_the_schedule() {
        try (WebhookReceiver receiver = WebhookReceiver.start()) {
            receiver.answerWith(d -> receiver.deliveries().size() == 1
                    ? Answer.status(429).header("Retry-After", "1")
                    : Answer.status(200));
            long id = enqueue(receiver, "throttled");
            awaitFinal(id);
            List<WebhookReceiver.Delivery> all = receiver.deliveries();
            assertEquals(2, all.size());
            long gap = gapMillis(all, 1);
            assertTrue(gap >= 1000 && gap < 1000 + SLACK_MS, "Retry-After: 1 honoured, gap " + gap + " ms");
            assertEquals("DELIVERED", node.status(id));
            assertEquals(
                    List.of(429, 200),
                    node.attempts(id).stream().map(a -> a.get("status_code")).toList());
        }
    }

    @Test
    void http_503_with_retry_after_http_date_waits_until_that_date() {
        try (WebhookReceiver receiver = WebhookReceiver.start()) {
            receiver.answerWith(d -> {
                if (receiver.deliveries().size() > 1) {
                    return Answer.status(200);
                }
                String at = DateTimeFormatter.RFC_1123_DATE_TIME.format(
                        ZonedDateTime.now(ZoneOffset.UTC).plusSeconds(2));
                return Answer.status(503).header("Retry-After", at);
            });
            long id = enqueue(receiver, "maintenance");
            await("first attempt recorded")
                    .atMost(LONG)
                    .pollInterval(Duration.ofMillis(10))
                    .pollInSameThread()
                    .until(() -> node.row(id).get("last_status") != null);
            assertTrue(((String) node.row(id).get("last_error")).startsWith("HTTP 503 (Retry-After: "), (String)
                    node.row(id).get("last_error"));
            awaitFinal(id);
            List<WebhookReceiver.Delivery> all = receiver.deliveries();
            assertEquals(2, all.size());
            long gap = gapMillis(all, 1);
            // HTTP-dates have whole seconds: 2 s after the Date header's second, so between 1 and 2 s from now
            assertTrue(gap >= 1000 && gap < 2000 + SLACK_MS, "Retry-After date honoured, gap " + gap + " ms");
            assertEquals("DELIVERED", node.status(id));
        }
    }

    @Test
    void retry_after_is_capped_at_max_retry_after() {
        try (WebhookReceiver receiver = WebhookReceiver.start()) {
            receiver.answerWith(d -> receiver.deliveries().size() == 1
                    ? Answer.status(429).header("Retry-After", "3600")
                    : Answer.status(200));
            long id = enqueue(receiver, "asks for an hour");
            awaitFinal(id);
            long gap = gapMillis(receiver.deliveries(), 1);
            assertTrue(gap >= 2500 && gap < 2500 + SLACK_MS, "capped at 2.5 s, gap " + gap + " ms");
            assertEquals("DELIVERED", node.status(id));
        }
    }

    @Test
    void retry_after_on_a_500_is_ignored_the_schedule_decides() {
        try (WebhookReceiver receiver = WebhookReceiver.start()) {
            receiver.answerWith(d -> receiver.deliveries().size() == 1
                    ? Answer.status(500).header("Retry-After", "30")
                    : Answer.status(200));
            long id = enqueue(receiver, "500 with retry-after");
            awaitFinal(id);
            long gap = gapMillis(receiver.deliveries(), 1);
            assertTrue(gap >= 160 && gap < 240 + SLACK_MS, "schedule's 200 ms ± 20 %, gap " + gap + " ms");
        }
    }

    @Test
    void http_410_fails_the_delivery_disables_the_endpoint_and_later_deliveries_to_it_are_not_sent() {
        try (WebhookReceiver gone = WebhookReceiver.start();
                WebhookReceiver other = WebhookReceiver.start()) {
            gone.answerWith(d -> Answer.status(410));
            long first = enqueue(gone, "to a gone endpoint");
            awaitFinal(first);
            Map<String, Object> row = node.row(first);
            assertEquals("FAILED", row.get("status"));
            assertEquals(1, row.get("attempts"));
            assertEquals(410, row.get("last_status"));
            assertEquals(
                    "endpoint gone: HTTP 410, endpoint disabled; no delivery is attempted to it until an "
                            + "operator retry is acknowledged",
                    row.get("last_error"));
            Map<String, Object> endpoint =
                    node.jdbc.queryForMap("SELECT * FROM webhook_endpoint WHERE url = ?", gone.url());
            assertNotNull(endpoint.get("disabled_at"));
            assertEquals(
                    "HTTP 410 Gone answered to " + node.webhookId(first) + " (delivery " + first + ", attempt 1)",
                    endpoint.get("disabled_reason"));
            assertEquals(1, node.count("""
                    SELECT COUNT(*) FROM session_event e JOIN webhook_delivery d ON d.session_id = e.session_id
                     WHERE d.id = ? AND e.type = 'delivery.exhausted'""", first));

            long second = enqueue(gone, "after it was disabled");
            long elsewhere = enqueue(other, "to another endpoint");
            awaitFinal(second);
            awaitFinal(elsewhere);
            sleep(QUIET);
            assertEquals(1, gone.deliveries().size(), "nothing more sent to the disabled endpoint");
            Map<String, Object> blocked = node.row(second);
            assertEquals("FAILED", blocked.get("status"));
            assertNull(blocked.get("last_status"));
            String error = (String) blocked.get("last_error");
            assertTrue(
                    error.startsWith("endpoint disabled since ")
                            && error.contains("(HTTP 410 Gone answered to " + node.webhookId(first))
                            && error.endsWith("; not sent"),
                    error);
            assertEquals(error, node.attempts(second).getFirst().get("error"));
            assertEquals("DELIVERED", node.status(elsewhere), "other endpoints are not affected");
            assertEquals(1, other.deliveries().size());
        }
    }

    @Test
    void abort_message_header_stops_retries_of_that_message_only() {
        try (WebhookReceiver receiver = WebhookReceiver.start()) {
            receiver.answerWith(d -> d.body().contains("poison")
                    ? Answer.status(422).header("webhook-delivery", "abort-message")
                    : Answer.status(200));
            long poison = enqueue(receiver, "poison");
            awaitFinal(poison);
            sleep(QUIET);
            assertEquals(1, receiver.deliveries().size());
            Map<String, Object> row = node.row(poison);
            assertEquals("FAILED", row.get("status"));
            assertEquals(1, row.get("attempts"));
            assertEquals(422, row.get("last_status"));
            assertEquals("aborted by receiver (webhook-delivery: abort-message) after HTTP 422", row.get("last_error"));
            assertEquals(0, node.count("SELECT COUNT(*) FROM webhook_endpoint WHERE url = ?", receiver.url()));

            long next = enqueue(receiver, "fine");
            awaitFinal(next);
            assertEquals("DELIVERED", node.status(next));
        }
    }

    @Test
    void a_later_reply_waits_for_the_earlier_one_and_other_sessions_do_not_wait() {
        try (WebhookReceiver receiver = WebhookReceiver.start()) {
            receiver.answerWith(d -> Answer.status(d.body().contains("earlier") ? 500 : 200));
            String s1 = "order-" + UUID.randomUUID();
            long pk1 = node.session(s1);
            long earlier = node.enqueue(pk1, s1, receiver.url(), "earlier");
            long later = node.enqueue(pk1, s1, receiver.url(), "later");
            String s2 = "order-" + UUID.randomUUID();
            long other = node.enqueue(node.session(s2), s2, receiver.url(), "other session");
            awaitFinal(earlier);
            awaitFinal(later);
            awaitFinal(other);
            List<String> arrivals = receiver.deliveries().stream()
                    .map(WebhookReceiver.Delivery::webhookId)
                    .toList();
            String e = node.webhookId(earlier);
            String l = node.webhookId(later);
            String o = node.webhookId(other);
            assertEquals(
                    List.of(e, e, e, l),
                    arrivals.stream().filter(id -> !id.equals(o)).toList(),
                    "the later reply only after the earlier one is dead");
            assertTrue(arrivals.indexOf(o) < arrivals.lastIndexOf(e), "the other session did not wait: " + arrivals);
            assertEquals("FAILED", node.status(earlier));
            assertEquals("DELIVERED", node.status(later));
            assertEquals("DELIVERED", node.status(other));
        }
    }
}
