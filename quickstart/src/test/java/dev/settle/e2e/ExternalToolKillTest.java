package dev.settle.e2e;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import dev.settle.agent.tools.ToolCatalog;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A tool with an effect outside Settle's database (the demo's {@code send_receipt}) is attempted at least once,
 * and every attempt carries the same {@code Idempotency-Key}: an agent killed (SIGKILL, its own JVM) after the
 * outside call and before its commit is replaced by one that calls again with that key, and a receiver that
 * deduplicates by it applies the effect once.
 */
class ExternalToolKillTest {
    /** One request that reached the receipt service. */
    record Attempt(String key, String body) {}

    /** The receipt service: records every attempt, applies each key once, holds the first attempt unanswered. */
    static final class ReceiptService implements AutoCloseable {
        final HttpServer server;
        final List<Attempt> attempts = new CopyOnWriteArrayList<>();
        final Map<String, String> applied = new ConcurrentHashMap<>();
        final CountDownLatch releaseFirst = new CountDownLatch(1);

        ReceiptService() throws IOException {
            server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
            server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
            server.createContext("/receipts", this::handle);
            server.start();
        }

        String url() {
            return "http://127.0.0.1:" + server.getAddress().getPort() + "/receipts";
        }

        private void handle(HttpExchange exchange) throws IOException {
            try (exchange) {
                String key = exchange.getRequestHeaders().getFirst("Idempotency-Key");
                String body = new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8);
                attempts.add(new Attempt(key, body));
                if (key != null) {
                    applied.putIfAbsent(key, body); // the effect, deduplicated by key
                }
                if (attempts.size() == 1) {
                    // the effect happened; the caller waits for the answer while the test kills it
                    try {
                        releaseFirst.await(60, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
                byte[] answer = "{\"receipt\":\"sent\"}".getBytes(StandardCharsets.UTF_8);
                exchange.getResponseHeaders().set("Content-Type", "application/json");
                exchange.sendResponseHeaders(201, answer.length);
                exchange.getResponseBody().write(answer);
            } catch (IOException e) {
                // the caller is gone (killed): nobody reads the answer
            }
        }

        @Override
        public void close() {
            releaseFirst.countDown();
            server.stop(0);
        }
    }

    static ReceiptService receipts;
    static SettleSystem settle;

    @BeforeAll
    static void start() throws IOException {
        receipts = new ReceiptService();
        settle = new SettleSystem(
                "extkey",
                false,
                Map.of(
                        "settle.demo.receipt-url",
                        receipts.url(),
                        // the receipt service listens on 127.0.0.1
                        "settle.demo.receipt-allowprivate",
                        "true"));
    }

    @AfterAll
    static void stop() {
        settle.close();
        receipts.close();
    }

    @Test
    void an_agent_killed_after_the_outside_call_before_its_commit_is_retried_with_the_same_key_and_applied_once()
            throws Exception {
        String s = SettleSystem.newSessionId();
        String text = "receipt for lunch 42 " + s;
        // the model asks for the receipt until it sees one sent: the successor's context may show the dead
        // holder's call already FAILED by the tool reaper (stuck past SETTLE_AGENT_TOOLTIMEOUT), and then it asks again
        settle.model.respondWith(r -> !r.body().contains(text)
                ? ModelDouble.echo(r)
                : r.messages().stream()
                                .noneMatch(m -> "tool".equals(m.role())
                                        && m.content() != null
                                        && m.content().startsWith("receipt for 42.00"))
                        ? ModelResponse.toolCall(
                                "send_receipt", "{\"amount\":42,\"category\":\"food\",\"note\":\"lunch\"}")
                        : ModelResponse.text("Receipt sent."));
        Map<String, Object> props = new HashMap<>(settle.sharedProperties());
        props.put("spring.kafka.consumer.group-id", settle.agentGroup());
        try (AgentProcess victim = new AgentProcess(props)) {
            // a child JVM starts slowly on a loaded machine
            await("the victim agent started")
                    .atMost(Duration.ofMinutes(4))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> victim.logContains("partitions assigned"));
            settle.post(s, text);
            await("the victim called the receipt service")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> receipts.attempts.size() == 1);
            assertEquals(List.of("EXECUTING"), statuses(s), "the call is made, its result not committed");

            victim.kill(); // after the outside call, before the tool's transaction commits
            receipts.releaseFirst.countDown();
            ConfigurableApplicationContext survivor = settle.startAgent();
            assertNotNull(survivor.getBean(ToolCatalog.class).get("send_receipt"), "the tool is offered");
            await("one reply after takeover")
                    .atMost(Duration.ofSeconds(120))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> settle.webhooks(s).size() == 1);
            await("the successor's turn committed")
                    .atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> settle.turnStates(s).equals(List.of("FAILED", "COMMITTED")));

            assertEquals(2, receipts.attempts.size(), "attempted twice: " + receipts.attempts);
            assertEquals(
                    1, receipts.attempts.stream().map(Attempt::key).distinct().count(), "with one key");
            assertEquals(1, receipts.applied.size(), "one effect after deduplication by key");
            String key = receipts.attempts.getFirst().key();
            assertTrue(key.matches("[0-9a-f]{64}"), key);
            assertEquals(
                    List.of(key),
                    settle.jdbc.queryForList("""
                    SELECT t.idem_key FROM tool_execution t JOIN chat_session s ON s.id = t.session_id
                     WHERE s.external_id = ?""", String.class, s),
                    "the key is the execution's idempotency key");
            assertEquals(List.of("COMPLETED"), statuses(s), "the execution recorded COMPLETED exactly once");
            assertTrue(
                    receipts.attempts.getFirst().body().contains("\"amount\":\"42.00\""),
                    receipts.attempts.getFirst().body());
            assertEquals(
                    receipts.attempts.getFirst().body(),
                    receipts.attempts.get(1).body(),
                    "the same receipt");
            assertEquals(
                    "Receipt sent.",
                    settle.webhooks(s).getFirst().json().get("data").get("text").asString());
            settle.launcher.stop(survivor);
        }
    }

    List<String> statuses(String sessionId) {
        return settle.jdbc.queryForList("""
                SELECT t.status FROM tool_execution t JOIN chat_session s ON s.id = t.session_id
                 WHERE s.external_id = ? ORDER BY t.id""", String.class, sessionId);
    }
}
