package dev.settle.ingest;

import dev.settle.contracts.EventCodec;
import dev.settle.contracts.Topics;
import dev.settle.contracts.TypingSignal;
import dev.settle.schema.DbTime;
import dev.settle.testsupport.SharedInfra;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.StringDeserializer;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ThreadLocalRandom;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code POST /v1/sessions/{id}/typing}: what it answers, that it stores nothing and creates no session, and which
 * calls publish a TypingSignal (on the message-accepted topic, keyed by the session, marked by its header).
 */
class TypingRouteTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static IngestApp app;
    static KafkaConsumer<String, String> events;

    @BeforeAll
    static void start() {
        app = new IngestApp("typing");
        // the broker is shared with the other test classes, whose databases number their sessions from 1 too
        app.jdbc.execute("ALTER TABLE chat_session AUTO_INCREMENT = "
                + ThreadLocalRandom.current().nextLong(1_000_000_000L, 2_000_000_000L));
        events = new KafkaConsumer<>(
                Map.of(ConsumerConfig.BOOTSTRAP_SERVERS_CONFIG, SharedInfra.kafkaBootstrap()),
                new StringDeserializer(),
                new StringDeserializer());
        List<TopicPartition> partitions = IntStream.range(0, Topics.PARTITIONS)
                .mapToObj(p -> new TopicPartition(Topics.MESSAGE_ACCEPTED, p))
                .toList();
        events.assign(partitions);
        events.seekToEnd(partitions);
        partitions.forEach(events::position);
    }

    @AfterAll
    static void stop() {
        events.close();
        app.close();
    }

    static HttpResponse<String> typing(String session, String key, String contentType, String body) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(app.base + "/v1/sessions/" + session + "/typing"))
                .POST(body == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(body));
        if (key != null) {
            b.header("Authorization", "Bearer " + key);
        }
        if (contentType != null) {
            b.header("Content-Type", contentType);
        }
        return app.send(b.build());
    }

    static String newSession() {
        return "typing-" + UUID.randomUUID();
    }

    static long message(String key, String session) {
        HttpResponse<String> r = app.call("POST", "/v1/sessions/" + session + "/messages", key, "{\"text\":\"hi\"}");
        assertEquals(202, r.statusCode(), r.body());
        return app.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, session);
    }

    static double counted(String outcome) {
        return app.context
                .getBean(MeterRegistry.class)
                .counter("settle.typing.signals", "outcome", outcome)
                .count();
    }

    /**
     * Reads typing signals until {@code count} for {@code sessionPk} arrived; returns every typing signal read
     * meanwhile (whole polls). A signal queued before them was handed to the broker before them, by the one
     * sender thread.
     */
    static List<TypingSignal> awaitSignals(long sessionPk, int count) {
        List<TypingSignal> seen = new ArrayList<>();
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        while (System.nanoTime() < deadline
                && seen.stream().filter(t -> t.sessionId() == sessionPk).count() < count) {
            for (ConsumerRecord<String, String> r : events.poll(Duration.ofMillis(100))) {
                Header type = r.headers().lastHeader(Topics.EVENT_TYPE);
                if (type == null) {
                    continue;
                }
                assertEquals(TypingSignal.TYPE, new String(type.value(), StandardCharsets.UTF_8));
                TypingSignal signal = EventCodec.decode(r.value(), TypingSignal.class);
                assertEquals(Long.toString(signal.sessionId()), r.key(), "keyed by the session like MessageAccepted");
                seen.add(signal);
            }
        }
        if (seen.stream().filter(t -> t.sessionId() == sessionPk).count() < count) {
            throw new AssertionError(
                    count + " TypingSignals for session " + sessionPk + " not within 30 s; saw " + seen);
        }
        return seen;
    }

    @Test
    void a_session_with_unanswered_messages_gets_one_signal_per_call_on_the_database_clock() {
        String s = newSession();
        long pk = message(IngestApp.KEY, s);
        Instant lastMessage = app.jdbc
                .query(
                        "SELECT last_message_at FROM chat_session WHERE id = ?",
                        (rs, i) -> DbTime.instant(rs, "last_message_at"),
                        pk)
                .getFirst();
        String before = app.fingerprint();
        double queued = counted("queued");

        HttpResponse<String> empty = typing(s, IngestApp.KEY, null, null);
        HttpResponse<String> object = typing(s, IngestApp.KEY, "application/json", "{}");
        HttpResponse<String> fields = typing(s, IngestApp.KEY, "application/json", "{\"state\":\"composing\"}");

        for (HttpResponse<String> r : List.of(empty, object, fields)) {
            assertEquals(202, r.statusCode(), r.body());
            assertEquals("", r.body());
        }
        assertEquals(queued + 3, counted("queued"));
        List<TypingSignal> signals = awaitSignals(pk, 3);
        assertEquals(
                List.of(pk, pk, pk),
                signals.stream().map(TypingSignal::sessionId).toList());
        for (TypingSignal t : signals) {
            assertTrue(t.signalAt().isAfter(lastMessage), t + " after the message at " + lastMessage);
        }
        assertEquals(before, app.fingerprint(), "a typing signal stores nothing");
    }

    @Test
    void an_unknown_session_another_tenants_and_an_answered_one_get_202_and_nothing_happens() throws Exception {
        String other = "t" + UUID.randomUUID().toString().substring(0, 8);
        HttpResponse<String> created = app.call(
                "POST", "/v1/admin/tenants", IngestApp.ADMIN_KEY, "{\"id\":\"" + other + "\",\"name\":\"other\"}");
        assertEquals(201, created.statusCode(), created.body());
        String otherKey = JSON.readTree(created.body()).get("apiKey").get("key").asString();
        String theirs = newSession();
        message(otherKey, theirs);
        String answered = newSession();
        long answeredPk = message(IngestApp.KEY, answered);
        app.jdbc.update(
                "UPDATE chat_session SET replied_version = version, oldest_unanswered_at = NULL WHERE id = ?",
                answeredPk);
        String unknown = newSession();
        String before = app.fingerprint();
        double queued = counted("queued");
        double ignored = counted("ignored");

        assertEquals(202, typing(unknown, IngestApp.KEY, null, null).statusCode());
        assertEquals(
                202, typing(theirs, IngestApp.KEY, "application/json", "{}").statusCode());
        assertEquals(202, typing(answered, IngestApp.KEY, null, null).statusCode());

        assertEquals(before, app.fingerprint(), "no session created, nothing stored");
        assertEquals(
                0,
                app.jdbc.queryForObject(
                        "SELECT COUNT(*) FROM chat_session WHERE external_id = ?", Integer.class, unknown));
        assertEquals(queued, counted("queued"));
        assertEquals(ignored + 3, counted("ignored"));
        // a signal queued after them is the first one published since
        String sentinel = newSession();
        long sentinelPk = message(IngestApp.KEY, sentinel);
        assertEquals(202, typing(sentinel, IngestApp.KEY, null, null).statusCode());
        List<TypingSignal> seen = awaitSignals(sentinelPk, 1);
        assertEquals(
                List.of(sentinelPk), seen.stream().map(TypingSignal::sessionId).toList());
    }

    @Test
    void without_a_valid_key_it_is_401() {
        String s = newSession();
        message(IngestApp.KEY, s);
        for (String key : new String[] {null, "wrong-key"}) {
            HttpResponse<String> r = typing(s, key, null, null);
            assertEquals(401, r.statusCode(), r.body());
            assertEquals(
                    "application/problem+json",
                    r.headers().firstValue("Content-Type").orElse("").split(";")[0]);
        }
    }

    @Test
    void a_body_that_is_not_a_json_object_or_a_bad_session_id_is_refused_with_a_problem() {
        String s = newSession();
        message(IngestApp.KEY, s);
        String before = app.fingerprint();
        double queued = counted("queued");
        record Bad(String session, String contentType, String body, int status, String type) {}
        for (Bad bad : List.of(
                new Bad(s, "application/json", "[]", 400, "malformed-json"),
                new Bad(s, "application/json", "\"typing\"", 400, "malformed-json"),
                new Bad(s, "application/json", "42", 400, "malformed-json"),
                new Bad(s, "application/json", "{\"a\":", 400, "malformed-json"),
                new Bad(s, "text/plain", "typing", 415, "unsupported-media-type"),
                new Bad("no*such*id", null, null, 400, "invalid-session-id"))) {
            HttpResponse<String> r = typing(bad.session(), IngestApp.KEY, bad.contentType(), bad.body());
            assertEquals(bad.status(), r.statusCode(), bad + ": " + r.body());
            assertEquals(
                    "application/problem+json",
                    r.headers().firstValue("Content-Type").orElse("").split(";")[0],
                    bad.toString());
            JsonNode problem = JSON.readTree(r.body());
            assertTrue(problem.get("type").asString().endsWith(bad.type()), bad + ": " + r.body());
        }
        assertEquals(queued, counted("queued"));
        assertEquals(before, app.fingerprint());
        assertFalse(app.fingerprint().isEmpty());
    }

    @Test
    void the_session_view_says_while_a_typing_hold_is_in_force_and_until_when() {
        String s = newSession();
        long pk = message(IngestApp.KEY, s);
        assertEquals("{\"armed\":false}", debounce(s).toString());
        app.jdbc.update("""
                INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at,
                                            window_fire_at, last_message_at, typing_at, held_until)
                VALUES (?, '2030-01-01 00:00:04.5', '2030-01-01 00:00:10', 1, 'message', UTC_TIMESTAMP(6),
                        '2030-01-01 00:00:01.5', '2030-01-01 00:00:00', '2030-01-01 00:00:01.5', '2030-01-01 00:00:04.5')""", pk);
        assertEquals(
                "{\"armed\":true,\"fireAt\":\"2030-01-01T00:00:04.500Z\",\"heldUntil\":\"2030-01-01T00:00:04.500Z\","
                        + "\"cause\":\"typing\"}",
                debounce(s).toString());
        assertEquals(
                "waiting",
                JSON.readTree(app.get("/v1/sessions/" + s).body()).get("state").asString());

        app.jdbc.update(
                "UPDATE debounce_timer SET fire_at = window_fire_at, held_until = NULL, typing_at = NULL"
                        + " WHERE session_id = ?",
                pk);
        assertEquals(
                "{\"armed\":true,\"fireAt\":\"2030-01-01T00:00:01.500Z\",\"heldUntil\":null,\"cause\":\"window\"}",
                debounce(s).toString());
        app.jdbc.update("DELETE FROM debounce_timer WHERE session_id = ?", pk);
    }

    static JsonNode debounce(String session) {
        HttpResponse<String> r = app.get("/v1/sessions/" + session);
        assertEquals(200, r.statusCode(), r.body());
        return JSON.readTree(r.body()).get("debounce");
    }
}
