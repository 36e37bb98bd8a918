package dev.settle.agent.webhook;

import com.sun.net.httpserver.HttpServer;
import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.BindException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;

/**
 * The address the SSRF guard checked is the address connected to: the name is resolved once, no second lookup
 * (by the HTTP client, the JVM or a proxy) can swap in a forbidden address, and the request still carries the
 * URL's host name.
 *
 * <p>All traffic stays on 127.0.0.0/8: this test's guard counts 127.0.0.2 as a public address (its stand-in for
 * an attacker's public server) while 127.0.0.1 stays forbidden. A counting receiver listens on 127.0.0.1 and the
 * "public" server on 127.0.0.2, on the same port. The host name is {@code localhost}, which the JVM's own
 * resolver maps to 127.0.0.1: any lookup but the guard's first one leads to loopback.
 */
class WebhookRebindingTest {
    static final Duration GENEROUS = Duration.ofSeconds(30);
    static final InetAddress LOOPBACK = address("127.0.0.1");
    static final InetAddress PUBLIC = address("127.0.0.2");
    /** Nothing listens there: connections are refused. */
    static final InetAddress PUBLIC_DOWN = address("127.0.0.3");

    WebhookReceiver loopback;
    HttpServer publicServer;
    final List<String> publicHosts = new CopyOnWriteArrayList<>();
    int port;

    /** The scripted DNS: answers per name and per lookup; counts lookups. */
    final Map<String, List<InetAddress[]>> answers = new ConcurrentHashMap<>();

    final Map<String, AtomicInteger> lookups = new ConcurrentHashMap<>();

    @BeforeEach
    void servers() throws IOException {
        for (int tries = 0; publicServer == null; tries++) {
            loopback = WebhookReceiver.start();
            port = URI.create(loopback.url()).getPort();
            try {
                publicServer = HttpServer.create(new InetSocketAddress(PUBLIC, port), 0);
            } catch (BindException e) { // that port is taken on 127.0.0.2: another pair
                loopback.close();
                if (tries == 5) {
                    throw e;
                }
            }
        }
        publicServer.createContext("/", exchange -> {
            publicHosts.add(exchange.getRequestHeaders().getFirst("Host"));
            exchange.getRequestBody().readAllBytes();
            exchange.sendResponseHeaders(200, -1);
            exchange.close();
        });
        publicServer.start();
    }

    @AfterEach
    void stop() {
        publicServer.stop(0);
        loopback.close();
    }

    /** Each lookup of {@code host} takes the next answer; the last one repeats. */
    void dns(String host, InetAddress[]... perLookup) {
        answers.put(host, List.of(perLookup));
    }

    InetAddress[] resolve(String host) throws UnknownHostException {
        List<InetAddress[]> script = answers.get(host);
        if (script == null) {
            throw new UnknownHostException(host);
        }
        int n = lookups.computeIfAbsent(host, h -> new AtomicInteger()).getAndIncrement();
        return script.get(Math.min(n, script.size() - 1));
    }

    int lookups(String host) {
        AtomicInteger n = lookups.get(host);
        return n == null ? 0 : n.get();
    }

    /** Refuses what the production guard refuses, except 127.0.0.2 and 127.0.0.3, which count as public here. */
    WebhookSender sender() {
        EndpointGuard guard = new EndpointGuard(
                false,
                this::resolve,
                a -> a.equals(PUBLIC) || a.equals(PUBLIC_DOWN) ? null : EndpointGuard.forbiddenClass(a));
        return new WebhookSender(WebhookNode.SECRET, Duration.ofSeconds(5), guard);
    }

    WebhookSender.Result send(WebhookSender sender, String url, String id) {
        return assertTimeoutPreemptively(GENEROUS, () -> sender.send(url, id, 1_700_000_000L, "{}"));
    }

    @Test
    void a_name_that_rebinds_to_loopback_after_the_check_is_never_connected_to_loopback() {
        dns("localhost", new InetAddress[] {PUBLIC}, new InetAddress[] {LOOPBACK});
        String url = "http://localhost:" + port + "/hooks";
        try (WebhookSender sender = sender()) {
            WebhookSender.Result first = send(sender, url, "wh_msg_rebind_1");
            assertEquals(0, loopback.deliveries().size(), "nothing reached loopback");
            assertEquals(200, first.status(), String.valueOf(first.error()));
            assertEquals(1, lookups("localhost"), "resolved once, by the guard");
            assertEquals(
                    List.of("localhost:" + port),
                    publicHosts,
                    "the checked address got the request, with the URL's host name");

            // the next attempt's lookup answers loopback: refused, and the pooled connection is not used either
            WebhookSender.Result second = send(sender, url, "wh_msg_rebind_2");
            assertNull(second.status());
            assertFalse(second.sent());
            assertEquals(
                    "refused: webhook host localhost resolves to 127.0.0.1, a loopback address (127.0.0.0/8); "
                            + "private networks are allowed only with SETTLE_WEBHOOK_ALLOWPRIVATE=true "
                            + "(settle.webhook.allowprivate); not sent",
                    second.error());
            assertEquals(2, lookups("localhost"));
            assertEquals(1, publicHosts.size());
            assertEquals(0, loopback.deliveries().size(), "nothing reached loopback");
        }
    }

    @Test
    void the_next_checked_address_is_tried_when_the_first_refuses_the_connection_and_no_other() {
        dns("hook.example", new InetAddress[] {PUBLIC_DOWN, PUBLIC}, new InetAddress[] {LOOPBACK});
        try (WebhookSender sender = sender()) {
            WebhookSender.Result r = send(sender, "http://hook.example:" + port + "/hooks", "wh_msg_fallback");
            assertEquals(200, r.status(), String.valueOf(r.error()));
            assertEquals(1, lookups("hook.example"));
            assertEquals(List.of("hook.example:" + port), publicHosts);
            assertEquals(0, loopback.deliveries().size(), "nothing reached loopback");
        }
    }

    @Test
    void proxies_configured_for_the_jvm_are_not_used() {
        // a proxy would resolve the host name itself: its answer is never checked
        dns("hook.example", new InetAddress[] {PUBLIC}, new InetAddress[] {LOOPBACK});
        Map<String, String> proxy = Map.of(
                "http.proxyHost",
                "127.0.0.1",
                "http.proxyPort",
                Integer.toString(port),
                "https.proxyHost",
                "127.0.0.1",
                "https.proxyPort",
                Integer.toString(port));
        Map<String, String> before = new HashMap<>();
        proxy.forEach((k, v) -> before.put(k, System.setProperty(k, v)));
        try (WebhookSender sender = sender()) {
            WebhookSender.Result r = send(sender, "http://hook.example:" + port + "/hooks", "wh_msg_proxy");
            assertEquals(0, loopback.deliveries().size(), "nothing went through the proxy on loopback");
            assertEquals(200, r.status(), String.valueOf(r.error()));
            assertEquals(List.of("hook.example:" + port), publicHosts);
        } finally {
            before.forEach((k, v) -> {
                if (v == null) {
                    System.clearProperty(k);
                } else {
                    System.setProperty(k, v);
                }
            });
        }
    }

    static InetAddress address(String literal) {
        try {
            return InetAddress.getByName(literal);
        } catch (UnknownHostException e) {
            throw new UncheckedIOException(e);
        }
    }
}
