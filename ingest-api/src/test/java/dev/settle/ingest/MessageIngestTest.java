package dev.settle.ingest;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

class MessageIngestTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static IngestApp app;

    @BeforeAll
    static void start() {
        app = new IngestApp("ingest");
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    static String sid() {
        return "s-" + UUID.randomUUID();
    }

    static JsonNode json(HttpResponse<String> r) {
        return JSON.readTree(r.body());
    }

    @Test
    void first_message_creates_the_session_at_version_1_and_versions_count_up() {
        String s = sid();
        HttpResponse<String> r1 =
                app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"hello\"}");
        HttpResponse<String> r2 =
                app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"again\"}");
        assertEquals(202, r1.statusCode(), r1.body());
        assertEquals(1, json(r1).get("version").asLong());
        assertEquals(s, json(r1).get("sessionId").asString());
        assertEquals(2, json(r2).get("version").asLong());

        JsonNode session = json(app.get("/v1/sessions/" + s));
        assertEquals(2, session.get("version").asLong());
        assertEquals(0, session.get("repliedVersion").asLong());

        JsonNode messages = json(app.get("/v1/sessions/" + s + "/messages")).get("messages");
        assertEquals(2, messages.size());
        assertEquals("hello", messages.get(0).get("text").asString());
        assertEquals("user", messages.get(0).get("role").asString());
        assertEquals(1, messages.get(0).get("version").asLong());
        assertEquals(
                json(r2).get("messageId").asString(),
                messages.get(1).get("messageId").asString());
    }

    /**
     * Spring binds a null by asking the statement for the parameter's type: the pool's driver answers it (the server's
     * answer for a statement prepared there, VARCHAR for every parameter of one run client-side) instead of throwing
     * an SQLException for each null bound, and the null binds.
     */
    @Test
    void the_pool_answers_parameter_types_so_binding_a_null_throws_nothing() {
        Integer type = app.jdbc.execute((java.sql.Connection c) -> {
            try (java.sql.PreparedStatement ps = c.prepareStatement("SELECT ?")) {
                return ps.getParameterMetaData().getParameterType(1);
            }
        });
        assertNotNull(type);
        assertEquals(Boolean.TRUE, app.jdbc.queryForObject("SELECT ? IS NULL", Boolean.class, (Object) null));
    }

    /**
     * The 202 of an accept is the same JSON whatever the request's Accept says: the message is committed before the
     * answer is written, so a client that accepts no JSON is still told it was accepted (not 406 for a stored
     * message).
     */
    @Test
    void the_accept_answer_is_application_json_whatever_the_accept_header() {
        String s = sid();
        String[][] accepts = {
            {}, {"Accept", "*/*"}, {"Accept", "application/json"}, {"Accept", "text/plain"}, {"Accept", "text/html"}
        };
        long version = 0;
        for (String[] accept : accepts) {
            HttpResponse<String> r =
                    app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"hi\"}", accept);
            version++;
            assertEquals(202, r.statusCode(), r.body());
            assertEquals(
                    "application/json", r.headers().firstValue("Content-Type").orElse(""));
            assertEquals(
                    "nosniff", r.headers().firstValue("X-Content-Type-Options").orElse(""));
            JsonNode body = json(r);
            assertEquals(List.of("sessionId", "messageId", "version"), List.copyOf(body.propertyNames()));
            assertEquals(s, body.get("sessionId").asString());
            assertTrue(body.get("messageId").asString().startsWith("msg_"), r.body());
            assertEquals(version, body.get("version").asLong());
        }
        assertEquals(
                accepts.length,
                app.jdbc.queryForObject(
                        "SELECT COUNT(*) FROM chat_message m JOIN chat_session s ON s.id = m.session_id WHERE s.external_id = ?",
                        Integer.class,
                        s));
    }

    @Test
    void same_idempotency_key_posted_5_times_concurrently_creates_one_message_and_five_identical_answers()
            throws Exception {
        for (int round = 0; round < 5; round++) {
            String s = sid();
            CyclicBarrier barrier = new CyclicBarrier(5);
            List<Future<HttpResponse<String>>> futures = new ArrayList<>();
            try (ExecutorService pool = Executors.newFixedThreadPool(5)) {
                for (int i = 0; i < 5; i++) {
                    futures.add(pool.submit(() -> {
                        barrier.await();
                        return app.post(
                                "/v1/sessions/" + s + "/messages",
                                "application/json",
                                "{\"text\":\"double click\"}",
                                "Idempotency-Key",
                                "click-1");
                    }));
                }
            }
            Set<String> bodies = new HashSet<>();
            for (Future<HttpResponse<String>> f : futures) {
                assertEquals(202, f.get().statusCode(), f.get().body());
                bodies.add(f.get().body());
            }
            assertEquals(1, bodies.size(), "five identical 202 bodies");
            assertEquals(
                    1,
                    app.jdbc.queryForObject(
                            "SELECT COUNT(*) FROM chat_message m JOIN chat_session s ON s.id = m.session_id WHERE s.external_id = ?",
                            Integer.class,
                            s));
            assertEquals(
                    1,
                    app.jdbc.queryForObject("SELECT version FROM chat_session WHERE external_id = ?", Long.class, s));

            String before = app.fingerprint();
            HttpResponse<String> other = app.post(
                    "/v1/sessions/" + s + "/messages",
                    "application/json",
                    "{\"text\":\"another body\"}",
                    "Idempotency-Key",
                    "click-1");
            assertEquals(422, other.statusCode());
            assertEquals(
                    "application/problem+json",
                    other.headers().firstValue("Content-Type").orElse(""));
            assertEquals(before, app.fingerprint());
        }
    }

    /**
     * Several devices posting the first messages of a new session at once may deadlock inside
     * InnoDB (the upsert of a row that does not exist yet takes gap locks). Each of them must still be
     * accepted, with versions 1..n, and never answered 503.
     */
    @Test
    void distinct_messages_posted_concurrently_to_new_sessions_are_all_accepted_with_versions_1_to_n()
            throws Exception {
        int devices = 6;
        for (int round = 0; round < 20; round++) {
            String s = sid();
            CyclicBarrier barrier = new CyclicBarrier(devices);
            List<Future<HttpResponse<String>>> futures = new ArrayList<>();
            try (ExecutorService pool = Executors.newFixedThreadPool(devices)) {
                for (int i = 0; i < devices; i++) {
                    int device = i;
                    futures.add(pool.submit(() -> {
                        barrier.await();
                        return app.post(
                                "/v1/sessions/" + s + "/messages",
                                "application/json",
                                "{\"text\":\"device " + device + "\"}");
                    }));
                }
            }
            Set<Long> versions = new HashSet<>();
            for (Future<HttpResponse<String>> f : futures) {
                assertEquals(202, f.get().statusCode(), f.get().body());
                versions.add(json(f.get()).get("version").asLong());
            }
            assertEquals(Set.of(1L, 2L, 3L, 4L, 5L, 6L), versions, "round " + round);
            assertEquals(
                    devices,
                    app.jdbc.queryForObject(
                            "SELECT COUNT(*) FROM chat_message m JOIN chat_session s ON s.id = m.session_id WHERE s.external_id = ?",
                            Integer.class,
                            s));
        }
    }

    @Test
    void state_is_waiting_while_a_timer_is_armed_and_unknown_session_is_404() {
        String s = sid();
        app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"x\"}");
        assertEquals("idle", json(app.get("/v1/sessions/" + s)).get("state").asString());
        long pk = app.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, s);
        app.jdbc.update(
                "INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at) "
                        + "VALUES (?, UTC_TIMESTAMP(6) + INTERVAL 1 HOUR, UTC_TIMESTAMP(6) + INTERVAL 1 HOUR, 1, 'message', UTC_TIMESTAMP(6))",
                pk);
        assertEquals("waiting", json(app.get("/v1/sessions/" + s)).get("state").asString());
        app.jdbc.update(
                "UPDATE chat_session SET lease_token = 'x', lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL 1 HOUR WHERE id = ?",
                pk);
        assertEquals(
                "generating", json(app.get("/v1/sessions/" + s)).get("state").asString());
        app.jdbc.update("DELETE FROM debounce_timer WHERE session_id = ?", pk);

        HttpResponse<String> missing = app.get("/v1/sessions/" + sid());
        assertEquals(404, missing.statusCode());
        assertEquals(
                "application/problem+json",
                missing.headers().firstValue("Content-Type").orElse(""));
        assertEquals(404, app.get("/v1/sessions/" + sid() + "/messages").statusCode());
    }

    @Test
    void the_session_shows_the_debounce_window_its_latest_message_armed_and_whether_it_was_learned() {
        String s = sid();
        app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"x\"}");
        JsonNode before = json(app.get("/v1/sessions/" + s));
        assertTrue(before.get("windowMs").isNull(), before.toString());
        assertTrue(before.get("windowCause").isNull(), before.toString());
        long pk = app.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, s);
        app.jdbc.update("""
                INSERT INTO session_pacing (session_id, samples, window_micros, window_cause, last_message_at,
                                            burst_messages, updated_at)
                VALUES (?, '2250', 2812500, 'learned', UTC_TIMESTAMP(6), 2, UTC_TIMESTAMP(6))""", pk);
        JsonNode learned = json(app.get("/v1/sessions/" + s));
        assertEquals(2812, learned.get("windowMs").asLong());
        assertEquals("learned", learned.get("windowCause").asString());
    }

    @Test
    void unicode_text_round_trips_exactly() {
        String s = sid();
        String text = "午饭 35 — пообедал 🍜 \"quoted\"\n\ttabbed";
        String body = JSON.writeValueAsString(java.util.Map.of("text", text));
        assertEquals(
                202,
                app.post("/v1/sessions/" + s + "/messages", "application/json; charset=utf-8", body)
                        .statusCode());
        assertEquals(
                text,
                json(app.get("/v1/sessions/" + s + "/messages"))
                        .get("messages")
                        .get(0)
                        .get("text")
                        .asString());
        assertTrue(json(app.get("/v1/sessions/" + s + "/messages"))
                .get("messages")
                .get(0)
                .get("createdAt")
                .asString()
                .endsWith("Z"));
    }

    /** The limits are inclusive: 16,000 characters (code points) and a 64 KiB body are accepted, one more is not. */
    @Test
    void text_of_exactly_16000_characters_and_a_body_of_exactly_64_KiB_are_accepted_one_more_is_413() {
        String s = sid();
        String path = "/v1/sessions/" + s + "/messages";
        String ascii = "a".repeat(16_000);
        HttpResponse<String> atLimit = app.post(path, "application/json", "{\"text\":\"" + ascii + "\"}");
        assertEquals(202, atLimit.statusCode(), atLimit.body());
        String emoji = "\uD83C\uDF5C".repeat(16_000); // 16,000 code points, 32,000 UTF-16 chars, 64,000 bytes
        HttpResponse<String> wide = app.post(path, "application/json", "{\"text\":\"" + emoji + "\"}");
        assertEquals(202, wide.statusCode(), wide.body());
        assertEquals(
                413,
                app.post(path, "application/json", "{\"text\":\"" + ascii + "a\"}")
                        .statusCode());

        String json = "{\"text\":\"padded\"}";
        String exactly64KiB = json + " ".repeat(64 * 1024 - json.length());
        assertEquals(64 * 1024, exactly64KiB.getBytes(java.nio.charset.StandardCharsets.UTF_8).length);
        HttpResponse<String> fullBody = app.post(path, "application/json", exactly64KiB);
        assertEquals(202, fullBody.statusCode(), fullBody.body());
        HttpResponse<String> over = app.post(path, "application/json", exactly64KiB + " ");
        assertEquals(413, over.statusCode());
        assertEquals(
                "application/problem+json",
                over.headers().firstValue("Content-Type").orElse(""));

        JsonNode messages = json(app.get(path)).get("messages");
        assertEquals(3, messages.size(), "the two refusals stored nothing");
        assertEquals(ascii, messages.get(0).get("text").asString());
        assertEquals(emoji, messages.get(1).get("text").asString());
        assertEquals("padded", messages.get(2).get("text").asString());
    }
}
