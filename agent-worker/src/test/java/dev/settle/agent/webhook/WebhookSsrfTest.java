package dev.settle.agent.webhook;

import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The SSRF guard in a running worker: fail fast at startup, refuse (and never send) at attempt time. */
class WebhookSsrfTest {

    @Test
    void a_private_webhook_url_stops_the_worker_at_startup_with_a_clear_message() {
        Exception e = assertThrows(
                Exception.class,
                () -> WebhookNode.start(
                                "ssrf-boot",
                                Map.of(
                                        "settle.webhook.url", "http://169.254.169.254/latest/meta-data/",
                                        "settle.webhook.allowprivate", "false"))
                        .close());
        Throwable cause = e;
        while (!(cause instanceof IllegalStateException) && cause.getCause() != null) {
            cause = cause.getCause();
        }
        assertEquals(
                "SETTLE_WEBHOOK_URL (settle.webhook.url) refused: webhook host 169.254.169.254 resolves to "
                        + "169.254.169.254, the link-local cloud metadata address (169.254.169.254); private networks are "
                        + "allowed only with SETTLE_WEBHOOK_ALLOWPRIVATE=true (settle.webhook.allowprivate)",
                cause.getMessage());
    }

    @Test
    void a_delivery_to_a_loopback_endpoint_is_refused_at_send_time_and_never_sent() {
        try (WebhookReceiver receiver = WebhookReceiver.start();
                WebhookNode node = WebhookNode.start("ssrf-send", Map.of("settle.webhook.allowprivate", "false"))) {
            // queued with its endpoint (as a tenant's would be): only the attempt-time check stands in the way
            long id = node.enqueue(node.session("ssrf-1"), "ssrf-1", receiver.url(), "to loopback");
            await("failed")
                    .atMost(Duration.ofSeconds(20))
                    .pollInterval(Duration.ofMillis(10))
                    .pollInSameThread()
                    .until(() -> "FAILED".equals(node.status(id)));
            assertEquals(0, receiver.deliveries().size(), "nothing reached the receiver");
            String refused = "refused: webhook host 127.0.0.1 resolves to 127.0.0.1, a loopback address "
                    + "(127.0.0.0/8); private networks are allowed only with SETTLE_WEBHOOK_ALLOWPRIVATE=true "
                    + "(settle.webhook.allowprivate); not sent";
            Map<String, Object> row = node.row(id);
            assertEquals(3, row.get("attempts"), "refused attempts follow the schedule: DNS may change");
            assertNull(row.get("last_status"));
            assertEquals("exhausted: 3 attempts failed, the last with " + refused, row.get("last_error"));
            List<Map<String, Object>> attempts = node.attempts(id);
            assertEquals(3, attempts.size());
            for (Map<String, Object> a : attempts) {
                assertEquals(refused, a.get("error"));
                assertNull(a.get("status_code"));
            }
            assertTrue(((String) row.get("last_error")).contains("SETTLE_WEBHOOK_ALLOWPRIVATE"));
        }
    }
}
