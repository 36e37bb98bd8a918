package dev.settle.ingest;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Guessing keys is cheap for the server and expensive for the guesser: a client address that has failed
 * {@code failure-burst} times is refused with 429 before its next key is looked up, even a valid one; other
 * addresses and the in-memory deployment key are unaffected; a request without a key costs nothing.
 */
class AuthenticationLimitTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    static IngestApp app;
    static String tenantKey;

    @BeforeAll
    static void start() {
        app = new IngestApp("authlimit", Map.of("settle.auth.failure-burst", "5", "settle.auth.failure-rate", "0.01"));
        var r = app.call("POST", "/v1/admin/tenants", IngestApp.ADMIN_KEY, "{\"id\":\"limited\"}");
        assertEquals(201, r.statusCode(), r.body());
        tenantKey = JSON.readTree(r.body()).get("apiKey").get("key").asString();
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    @Test
    void an_address_that_failed_too_often_is_refused_before_any_lookup() throws IOException {
        String from = "127.0.0.7";
        for (int i = 0; i < 3; i++) {
            assertEquals(401, get(from, null).status, "no key at all is not a failed guess");
        }
        for (int i = 0; i < 5; i++) {
            Answer wrong = get(from, "sk_" + Character.toString('a' + i).repeat(43));
            assertEquals(401, wrong.status, wrong.body);
            assertTrue(wrong.headers.contains("WWW-Authenticate: Bearer"), wrong.headers);
        }
        Answer valid = get(from, tenantKey);
        assertEquals(429, valid.status, "a valid key from the blocked address is not even looked up: " + valid.body);
        JsonNode problem = JSON.readTree(valid.body);
        assertEquals(
                "https://settle.dev/problems/rate-limited", problem.get("type").asString());
        assertTrue(valid.headers.contains("application/problem+json"), valid.headers);
        long retryAfter = Long.parseLong(valid.headers.replaceAll("(?s).*Retry-After: (\\d+).*", "$1"));
        assertTrue(retryAfter >= 1 && retryAfter <= 100, "Retry-After " + retryAfter);

        assertEquals(200, get(from, IngestApp.KEY).status, "the deployment key is compared in memory, no lookup");
        assertEquals(200, get("127.0.0.8", tenantKey).status, "another address is not blocked");
        assertEquals(429, get(from, "sk_" + "z".repeat(43)).status);
    }

    record Answer(int status, String headers, String body) {}

    /** GET /v1/webhooks/deliveries from a given loopback address (Linux routes all of 127/8 to lo). */
    static Answer get(String localAddress, String key) throws IOException {
        URI base = URI.create(app.base);
        try (Socket socket = new Socket(
                InetAddress.getByName(base.getHost()), base.getPort(), InetAddress.getByName(localAddress), 0)) {
            socket.setSoTimeout(10_000);
            String request =
                    "GET /v1/webhooks/deliveries HTTP/1.1\r\nHost: " + base.getHost() + "\r\nConnection: close\r\n"
                            + (key == null ? "" : "Authorization: Bearer " + key + "\r\n") + "\r\n";
            socket.getOutputStream().write(request.getBytes(StandardCharsets.ISO_8859_1));
            InputStream in = socket.getInputStream();
            String response = new String(in.readAllBytes(), StandardCharsets.UTF_8);
            int split = response.indexOf("\r\n\r\n");
            String head = response.substring(0, split);
            String body = response.substring(split + 4);
            if (head.contains("Transfer-Encoding: chunked")) {
                body = body.substring(body.indexOf("\r\n") + 2, body.lastIndexOf("\r\n0\r\n"));
            }
            return new Answer(Integer.parseInt(head.substring(9, 12)), head, body);
        }
    }
}
