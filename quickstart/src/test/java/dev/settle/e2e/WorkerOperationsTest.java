package dev.settle.e2e;

import dev.settle.quickstart.SettleLauncher;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The workers are scrapeable: each serves its actuator (liveness, readiness over the database and Kafka,
 * Prometheus) on its own port, and after one message their counters say exactly what happened: one debounce
 * fire by the window, one lease acquired, one committed turn, one delivered webhook attempt.
 *
 * <p>The webhook dispatcher here polls only hourly: the reply is delivered within seconds because the commit
 * that wrote its delivery row wakes the dispatcher of the same instance ({@code OutboxWritten}).
 */
class WorkerOperationsTest {
    static final HttpClient HTTP = HttpClient.newHttpClient();
    static final JsonMapper JSON = JsonMapper.builder().build();
    static SettleSystem settle;

    @BeforeAll
    static void start() {
        settle = new SettleSystem("workerops", true, java.util.Map.of("settle.webhook.poll-interval", "1h"));
    }

    @AfterAll
    static void stop() {
        settle.close();
    }

    @Test
    void each_worker_serves_probes_and_prometheus_counters_that_match_one_message() throws Exception {
        String s = SettleSystem.newSessionId();
        settle.post(s, "just one");
        await("one webhook delivered")
                .atMost(Duration.ofSeconds(30))
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);

        for (ConfigurableApplicationContext worker :
                new ConfigurableApplicationContext[] {settle.debounce, settle.agent}) {
            String base = "http://127.0.0.1:" + SettleLauncher.port(worker);
            assertEquals(
                    "UP", json(base + "/actuator/health/liveness").get("status").asString());
            JsonNode readiness = json(base + "/actuator/health/readiness");
            assertEquals("UP", readiness.get("status").asString(), readiness.toString());
            assertEquals(
                    "UP", readiness.get("components").get("db").get("status").asString());
            assertEquals(
                    "UP", readiness.get("components").get("kafka").get("status").asString());
        }

        String debounce = "http://127.0.0.1:" + SettleLauncher.port(settle.debounce) + "/actuator/prometheus";
        // The test JVM's broker is shared and every system's agent reads SessionReady from the earliest offset:
        // an earlier test's wake-up for the same session pk may answer this session before its window ends
        // (harmless: one reply all the same). The window's timer still fires, once.
        await("the window fire counted")
                .atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> sample(get(debounce), "settle_debounce_fires_total", "cause=\"window\"") == 1.0);
        settle.awaitQuiescent(Duration.ofSeconds(30)); // no timer armed, no event unconsumed: no fire can follow
        assertEquals(1.0, sample(get(debounce), "settle_debounce_fires_total", "cause=\"window\""));

        String agent = "http://127.0.0.1:" + SettleLauncher.port(settle.agent) + "/actuator/prometheus";
        // the webhook's counter moves just after the receiver saw it
        await("the attempt recorded")
                .atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() ->
                        sample(get(agent), "settle_webhook_attempts_seconds_count", "outcome=\"delivered\"") == 1.0);
        String metrics = get(agent);
        assertEquals(1.0, sample(metrics, "settle_lease_claims_total", "result=\"acquired\""));
        assertEquals(1.0, sample(metrics, "settle_turns_total", "outcome=\"committed\""));
        assertEquals(0.0, sample(metrics, "settle_turns_inflight", ""));
        assertTrue(metrics.contains("settle_webhook_attempts_seconds_max"), "the attempt latency is exported");
    }

    static JsonNode json(String url) throws Exception {
        return JSON.readTree(get(url));
    }

    static String get(String url) {
        try {
            HttpResponse<String> r = HTTP.send(
                    HttpRequest.newBuilder(URI.create(url))
                            .timeout(Duration.ofSeconds(10))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            assertEquals(200, r.statusCode(), url + ": " + r.body());
            return r.body();
        } catch (Exception e) {
            throw new AssertionError(url, e);
        }
    }

    /** The value of the one sample of {@code name} whose labels contain {@code label}; -1 when there is none. */
    static double sample(String exposition, String name, String label) {
        Matcher m =
                Pattern.compile("(?m)^" + name + "(\\{[^}]*})? ([0-9.eE+-]+)$").matcher(exposition);
        double found = -1;
        while (m.find()) {
            String labels = m.group(1) == null ? "" : m.group(1);
            if (labels.contains(label)) {
                if (found >= 0) {
                    throw new AssertionError("two samples of " + name + " with " + label);
                }
                found = Double.parseDouble(m.group(2));
            }
        }
        return found;
    }
}
