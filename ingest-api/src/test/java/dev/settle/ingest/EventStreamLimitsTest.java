package dev.settle.ingest;

import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Open event streams are bounded per tenant (3 here) and per instance (5 here): one more is a 429 problem with
 * Retry-After before anything is streamed, and every stream gives its slot back however it ends (the client
 * hangs up, the maximum duration, a database error of its own read or of the instance's shared poll), so the same
 * number opens again afterwards.
 */
class EventStreamLimitsTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String SESSION = "streamed";
    static IngestApp app;
    static String otherKey;

    @BeforeAll
    static void start() {
        // keep-alive 100 ms: a stream whose client went away notices at its next write
        app = new IngestApp(
                "streamlimits",
                Map.of(
                        "settle.events.max-per-tenant",
                        "3",
                        "settle.events.max-per-instance",
                        "5",
                        "settle.events.keep-alive",
                        "100ms"));
        HttpResponse<String> created = app.call("POST", "/v1/admin/tenants", IngestApp.ADMIN_KEY, "{\"id\":\"other\"}");
        assertEquals(201, created.statusCode(), created.body());
        otherKey = JSON.readTree(created.body()).get("apiKey").get("key").asString();
        for (String key : new String[] {IngestApp.KEY, otherKey}) {
            assertEquals(
                    200,
                    app.call("PUT", "/v1/sessions/" + SESSION, key, "{\"policy\":\"merge\"}")
                            .statusCode());
        }
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    /** An open event stream on its own connection; {@link #close} hangs up. */
    record Stream(HttpClient client, InputStream body) implements AutoCloseable {
        @Override
        public void close() throws Exception {
            body.close();
            client.shutdownNow();
        }

        /** Reads until the server ends the stream. */
        String readToEnd() throws Exception {
            return new String(body.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    static HttpRequest request(IngestApp on, String key) {
        return request(on, key, SESSION);
    }

    static HttpRequest request(IngestApp on, String key, String session) {
        return HttpRequest.newBuilder(URI.create(on.base + "/v1/sessions/" + session + "/events"))
                .header("Authorization", "Bearer " + key)
                .header("Accept", "text/event-stream")
                .GET()
                .build();
    }

    /** Opens a stream that must be accepted: 200 and the stream's first line. */
    static Stream open(IngestApp on, String key) throws Exception {
        return open(on, key, SESSION);
    }

    static Stream open(IngestApp on, String key, String session) throws Exception {
        HttpClient client = HttpClient.newHttpClient();
        HttpResponse<InputStream> r = client.send(request(on, key, session), HttpResponse.BodyHandlers.ofInputStream());
        if (r.statusCode() != 200) {
            throw new AssertionError("stream refused with " + r.statusCode() + ": "
                    + new String(r.body().readAllBytes(), StandardCharsets.UTF_8));
        }
        byte[] start = r.body().readNBytes("retry: 1000\n".length());
        assertEquals("retry: 1000\n", new String(start, StandardCharsets.UTF_8));
        return new Stream(client, r.body());
    }

    static void assertRefused(IngestApp on, String key) throws Exception {
        HttpResponse<InputStream> r = on.http.send(request(on, key), HttpResponse.BodyHandlers.ofInputStream());
        if (r.statusCode() != 429) {
            r.body().close(); // a stream was opened: do not wait for its end
            throw new AssertionError("expected 429, got " + r.statusCode());
        }
        assertEquals(
                "application/problem+json",
                r.headers().firstValue("Content-Type").orElse("").split(";")[0]);
        JsonNode problem = JSON.readTree(r.body().readAllBytes());
        assertEquals(
                "https://settle.dev/problems/too-many-streams",
                problem.get("type").asString());
        assertEquals(429, problem.get("status").asInt());
        assertTrue(Long.parseLong(r.headers().firstValue("Retry-After").orElse("0")) > 0, "Retry-After");
    }

    static double openOn(IngestApp on) {
        return on.context
                .getBean(MeterRegistry.class)
                .get("settle.events.open")
                .gauge()
                .value();
    }

    static void awaitAllReleased(IngestApp on) {
        await().atMost(Duration.ofSeconds(20)).until(() -> openOn(on) == 0);
    }

    static void closeAll(List<Stream> streams) throws Exception {
        for (Stream s : streams) {
            s.close();
        }
        streams.clear();
    }

    @Test
    void over_the_tenant_or_the_instance_limit_is_a_429_and_hung_up_streams_give_their_slots_back() throws Exception {
        List<Stream> streams = new ArrayList<>();
        try {
            for (int round = 1; round <= 2; round++) {
                for (int i = 0; i < 3; i++) {
                    streams.add(open(app, IngestApp.KEY));
                }
                assertRefused(app, IngestApp.KEY); // the tenant's 4th
                streams.add(open(app, otherKey)); // another tenant still gets streams ...
                streams.add(open(app, otherKey));
                assertEquals(5, openOn(app));
                assertRefused(app, otherKey); // ... until the instance holds 5
                assertRefused(app, IngestApp.KEY);
                assertEquals(5, openOn(app), "a refused stream takes no slot");
                closeAll(streams);
                awaitAllReleased(app); // then the same number opens again
            }
        } finally {
            closeAll(streams);
        }
    }

    @Test
    void streams_waiting_for_a_session_not_created_yet_take_slots_like_any_other() throws Exception {
        List<Stream> streams = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                streams.add(open(app, IngestApp.KEY, "not-yet-" + i));
            }
            assertRefused(app, IngestApp.KEY); // the tenant's 4th, on an existing session
            assertEquals(3, openOn(app));
            assertEquals(
                    0,
                    app.jdbc.queryForObject(
                            "SELECT COUNT(*) FROM chat_session WHERE external_id LIKE 'not-yet-%'", Integer.class));
            closeAll(streams);
            awaitAllReleased(app);
            for (int i = 0; i < 3; i++) {
                streams.add(open(app, IngestApp.KEY));
            }
            HttpResponse<InputStream> r =
                    app.http.send(request(app, IngestApp.KEY, "not-yet-4"), HttpResponse.BodyHandlers.ofInputStream());
            r.body().close();
            assertEquals(429, r.statusCode(), "a waiting stream is refused like any other");
        } finally {
            closeAll(streams);
            awaitAllReleased(app);
        }
    }

    @Test
    void a_stream_that_fails_on_a_database_error_gives_its_slot_back() throws Exception {
        List<Stream> streams = new ArrayList<>();
        try {
            for (int i = 0; i < 3; i++) {
                streams.add(open(app, IngestApp.KEY));
            }
            assertEquals(3, openOn(app));
            // the streams' own read fails: news of the session (a seq without its row) and no event table
            app.jdbc.execute("RENAME TABLE session_event TO session_event_away");
            try {
                app.jdbc.update(
                        "UPDATE chat_session SET event_seq = event_seq + 1 WHERE tenant_id = 'default' AND external_id = ?",
                        SESSION);
                awaitAllReleased(app);
            } finally {
                app.jdbc.execute("RENAME TABLE session_event_away TO session_event");
            }
            closeAll(streams);
            // the shared poll fails: every stream it serves ends
            for (int i = 0; i < 3; i++) {
                streams.add(open(app, IngestApp.KEY));
            }
            assertEquals(3, openOn(app));
            app.jdbc.execute("RENAME TABLE chat_session TO chat_session_away");
            try {
                awaitAllReleased(app);
            } finally {
                app.jdbc.execute("RENAME TABLE chat_session_away TO chat_session");
            }
            closeAll(streams);
            for (int i = 0; i < 3; i++) {
                streams.add(open(app, IngestApp.KEY));
            }
            assertRefused(app, IngestApp.KEY);
        } finally {
            closeAll(streams);
            awaitAllReleased(app);
        }
    }

    @Test
    void streams_that_reach_their_maximum_duration_give_their_slots_back() throws Exception {
        try (IngestApp short_ = new IngestApp(
                "streamduration",
                Map.of(
                        "settle.events.max-per-tenant",
                        "2",
                        "settle.events.max-per-instance",
                        "2",
                        "settle.events.max-duration",
                        "300ms"))) {
            assertEquals(
                    200,
                    short_.call("PUT", "/v1/sessions/" + SESSION, IngestApp.KEY, "{\"policy\":\"merge\"}")
                            .statusCode());
            for (int round = 1; round <= 2; round++) {
                List<Stream> streams = new ArrayList<>();
                streams.add(open(short_, IngestApp.KEY));
                streams.add(open(short_, IngestApp.KEY));
                for (Stream s : streams) {
                    s.readToEnd(); // the server ends it after 300 ms
                }
                closeAll(streams);
                awaitAllReleased(short_);
            }
        }
    }
}
