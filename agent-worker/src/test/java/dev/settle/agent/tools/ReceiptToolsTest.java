package dev.settle.agent.tools;

import com.sun.net.httpserver.HttpServer;
import dev.settle.agent.demo.DemoConfiguration;
import dev.settle.agent.demo.ReceiptClient;
import dev.settle.agent.demo.ReceiptTools;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SimpleDriverDataSource;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.math.BigDecimal;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The demo tool {@code send_receipt} and its client against a real HTTP server on loopback. */
class ReceiptToolsTest {
    /** One request the server received: path, Idempotency-Key, body. */
    record Received(String path, String key, String body) {}

    HttpServer server;
    final List<Received> received = new CopyOnWriteArrayList<>();
    final CountDownLatch hang = new CountDownLatch(1);
    volatile int status = 201;

    @BeforeEach
    void start() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(Executors.newVirtualThreadPerTaskExecutor());
        server.createContext("/", exchange -> {
            try (exchange) {
                String path = exchange.getRequestURI().getPath();
                received.add(new Received(
                        path,
                        exchange.getRequestHeaders().getFirst("Idempotency-Key"),
                        new String(exchange.getRequestBody().readAllBytes(), StandardCharsets.UTF_8)));
                if (path.equals("/hang")) {
                    hang.await(30, TimeUnit.SECONDS);
                }
                if (path.equals("/redirect")) {
                    exchange.getResponseHeaders().set("Location", url("/target"));
                    exchange.sendResponseHeaders(302, -1);
                    return;
                }
                exchange.sendResponseHeaders(status, -1);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        });
        server.start();
    }

    @AfterEach
    void stop() {
        hang.countDown();
        server.stop(0);
    }

    String url(String path) {
        return "http://127.0.0.1:" + server.getAddress().getPort() + path;
    }

    static ReceiptClient client(String url, boolean allowPrivate) {
        return client(url, allowPrivate, Duration.ofSeconds(20)); // the build machine is slow
    }

    static ReceiptClient client(String url, boolean allowPrivate, Duration timeout) {
        return new ReceiptClient(url, timeout, dev.settle.agent.webhook.EndpointGuard.system(allowPrivate));
    }

    @Test
    void the_tool_is_offered_only_when_a_receipt_url_is_set() {
        ApplicationContextRunner runner = new ApplicationContextRunner()
                .withUserConfiguration(DemoConfiguration.class)
                .withBean(JdbcTemplate.class, () -> new JdbcTemplate(new SimpleDriverDataSource()));
        runner.run(c -> assertFalse(c.containsBean("receiptTools"), "unset"));
        runner.withPropertyValues("settle.demo.receipt-url= ")
                .run(c -> assertFalse(c.containsBean("receiptTools"), "blank"));
        runner.withPropertyValues("settle.demo.receipt-url=" + url("/receipts"))
                .run(c -> assertEquals(
                        List.of("send_receipt"),
                        new ToolCatalog(List.of(c.getBean(ReceiptTools.class)))
                                .specifications().stream().map(s -> s.name()).toList()));
    }

    @Test
    void every_attempt_sends_the_calls_idempotency_key_and_a_failed_answer_fails_the_call() {
        try (ReceiptTools tools = new ReceiptTools(client(url("/receipts"), true))) {
            ToolCallContext.enter(7, 11L, "k".repeat(64));
            try {
                assertEquals(
                        "receipt for 42.00 under food sent (Idempotency-Key " + "k".repeat(64) + ")",
                        tools.sendReceipt(new BigDecimal("42"), "food", "lunch"));
                status = 503;
                IllegalStateException failed = assertThrows(
                        IllegalStateException.class, () -> tools.sendReceipt(new BigDecimal("42"), "food", "lunch"));
                assertEquals("the receipt service answered HTTP 503", failed.getMessage());
                assertThrows(
                        IllegalArgumentException.class, () -> tools.sendReceipt(new BigDecimal("42"), "rent", null));
            } finally {
                ToolCallContext.exit();
            }
        }
        assertEquals(2, received.size(), "the refused arguments sent nothing");
        for (Received r : received) {
            assertEquals("k".repeat(64), r.key());
            assertEquals("{\"session\":7,\"amount\":\"42.00\",\"category\":\"food\",\"note\":\"lunch\"}", r.body());
        }
    }

    @Test
    void a_redirect_is_not_followed() {
        try (ReceiptClient client = client(url("/redirect"), true)) {
            assertEquals(302, client.post("{}", "k"));
        }
        assertEquals(List.of("/redirect"), received.stream().map(Received::path).toList());
    }

    @Test
    void a_private_address_is_refused_unless_allowed_and_nothing_is_sent() {
        try (ReceiptClient client = client(url("/receipts"), false)) {
            IllegalStateException refused = assertThrows(IllegalStateException.class, () -> client.post("{}", "k"));
            assertTrue(refused.getMessage().contains("SETTLE_DEMO_RECEIPTALLOWPRIVATE=true"), refused.getMessage());
        }
        assertEquals(List.of(), received);
    }

    @Test
    void a_service_that_does_not_answer_fails_the_call_after_the_timeout() {
        try (ReceiptClient client = client(url("/hang"), true, Duration.ofSeconds(1))) {
            long started = System.nanoTime();
            assertThrows(UncheckedIOException.class, () -> client.post("{}", "k"));
            Duration took = Duration.ofNanos(System.nanoTime() - started);
            assertTrue(took.compareTo(Duration.ofSeconds(15)) < 0, "took " + took);
        }
        assertEquals(1, received.size());
    }

    @Test
    void a_url_that_is_not_http_is_refused_at_startup() {
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> client("file:///etc/passwd", true));
        assertTrue(e.getMessage().startsWith("SETTLE_DEMO_RECEIPTURL"), e.getMessage());
    }
}
