package dev.settle.ingest;

import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpClient;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The event stream of a session id the tenant has not used yet opens at once (200, keep-alives) and, once the first
 * message creates the session, streams it from its first event exactly as for an existing session: each event once,
 * in order, even when the first message is posted at the moment the stream opens. Session ids are per tenant: a
 * stream never shows another tenant's session of the same id. Streams waiting for their sessions share one lookup per
 * poll interval, and no open stream costs no statement.
 */
class EventStreamBeforeSessionTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final Duration WITHIN = Duration.ofSeconds(10);
    static IngestApp app;
    static String otherKey;

    @BeforeAll
    static void start() {
        app = new IngestApp(
                "streambefore",
                Map.of(
                        "settle.events.keep-alive",
                        "100ms",
                        StatementCounter.PROPERTY,
                        StatementCounter.class.getName()));
        HttpResponse<String> created = app.call("POST", "/v1/admin/tenants", IngestApp.ADMIN_KEY, "{\"id\":\"other\"}");
        assertEquals(201, created.statusCode(), created.body());
        otherKey = JSON.readTree(created.body()).get("apiKey").get("key").asString();
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    static String newSession() {
        return "new-" + UUID.randomUUID();
    }

    /** Posts a message; returns its messageId. */
    static String post(String key, String session, String text) {
        HttpResponse<String> r =
                app.call("POST", "/v1/sessions/" + session + "/messages", key, "{\"text\":\"" + text + "\"}");
        assertEquals(202, r.statusCode(), r.body());
        return JSON.readTree(r.body()).get("messageId").asString();
    }

    /** The events as "id event messageId version text" lines, to compare whole sequences at once. */
    static List<String> describe(List<SseClient.Event> events) {
        List<String> lines = new ArrayList<>();
        for (SseClient.Event e : events) {
            JsonNode data = JSON.readTree(e.data());
            lines.add(e.id() + " " + e.type() + " " + data.get("messageId").asString() + " v"
                    + data.get("version").asLong() + " " + data.get("text").asString());
        }
        return lines;
    }

    /** What a stream of message.accepted events must show for these messages, ids from {@code firstId}. */
    static List<String> accepted(long firstId, List<String> messageIds, List<String> texts) {
        List<String> lines = new ArrayList<>();
        for (int i = 0; i < messageIds.size(); i++) {
            long seq = firstId + i;
            lines.add(seq + " message.accepted " + messageIds.get(i) + " v" + seq + " " + texts.get(i));
        }
        return lines;
    }

    static boolean exists(String tenant, String session) {
        return app.jdbc.queryForObject(
                        "SELECT COUNT(*) FROM chat_session WHERE tenant_id = ? AND external_id = ?",
                        Integer.class,
                        tenant,
                        session)
                == 1;
    }

    @Test
    void a_stream_opened_before_the_first_message_waits_and_then_streams_the_session_from_its_first_event()
            throws Exception {
        String s = newSession();
        try (SseClient stream = SseClient.open(app, IngestApp.KEY, s, null)) {
            assertEquals(200, stream.status);
            assertEquals("text/event-stream", stream.contentType.split(";")[0]);
            await().atMost(WITHIN).until(() -> stream.keepAlives() >= 2); // the usual keep-alives while waiting
            assertEquals(false, exists("default", s), "the stream creates no session");
            assertEquals(0, stream.pending());

            List<String> ids = List.of(post(IngestApp.KEY, s, "one"), post(IngestApp.KEY, s, "two"));
            assertEquals(accepted(1, ids, List.of("one", "two")), describe(stream.take(2, WITHIN)));
            String third = post(IngestApp.KEY, s, "three");
            assertEquals(accepted(3, List.of(third), List.of("three")), describe(stream.take(1, WITHIN)));
        }
    }

    @Test
    void the_first_message_posted_as_the_stream_opens_is_streamed_exactly_once() throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            for (int round = 1; round <= 25; round++) {
                String s = newSession();
                CyclicBarrier together = new CyclicBarrier(2);
                CompletableFuture<SseClient> opening = CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                together.await(5, TimeUnit.SECONDS);
                                return SseClient.open(app, IngestApp.KEY, s, null);
                            } catch (Exception e) {
                                throw new IllegalStateException(e);
                            }
                        },
                        pool);
                CompletableFuture<String> first = CompletableFuture.supplyAsync(
                        () -> {
                            try {
                                together.await(5, TimeUnit.SECONDS);
                            } catch (Exception e) {
                                throw new IllegalStateException(e);
                            }
                            return post(IngestApp.KEY, s, "first");
                        },
                        pool);
                try (SseClient stream = opening.get(10, TimeUnit.SECONDS)) {
                    assertEquals(200, stream.status, "round " + round);
                    List<String> ids = new ArrayList<>(List.of(first.get(10, TimeUnit.SECONDS)));
                    ids.add(post(IngestApp.KEY, s, "second"));
                    // the last event read is the last one posted: nothing before it was lost or doubled
                    assertEquals(
                            accepted(1, ids, List.of("first", "second")),
                            describe(stream.take(2, WITHIN)),
                            "round " + round);
                    String third = post(IngestApp.KEY, s, "third");
                    assertEquals(
                            accepted(3, List.of(third), List.of("third")),
                            describe(stream.take(1, WITHIN)),
                            "round " + round);
                }
            }
        } finally {
            pool.shutdownNow();
        }
    }

    @Test
    void a_last_event_id_given_before_the_session_exists_streams_from_after_it() throws Exception {
        String s = newSession();
        try (SseClient stream = SseClient.open(app, IngestApp.KEY, s, "2")) {
            assertEquals(200, stream.status);
            List<String> ids = List.of(
                    post(IngestApp.KEY, s, "one"), post(IngestApp.KEY, s, "two"), post(IngestApp.KEY, s, "three"));
            assertEquals(accepted(3, ids.subList(2, 3), List.of("three")), describe(stream.take(1, WITHIN)));
            String fourth = post(IngestApp.KEY, s, "four");
            assertEquals(accepted(4, List.of(fourth), List.of("four")), describe(stream.take(1, WITHIN)));
        }
    }

    @Test
    void another_tenants_session_of_the_same_id_is_never_streamed() throws Exception {
        String s = newSession();
        String theirs = post(otherKey, s, "theirs");
        try (SseClient stream = SseClient.open(app, IngestApp.KEY, s, null)) {
            assertEquals(200, stream.status);
            post(otherKey, s, "theirs again"); // seq 2 of the other tenant's session, while this stream waits
            await().atMost(WITHIN).until(() -> stream.keepAlives() >= 2);
            assertEquals(0, stream.pending(), "nothing of the other tenant's session");

            String mine = post(IngestApp.KEY, s, "mine");
            assertEquals(accepted(1, List.of(mine), List.of("mine")), describe(stream.take(1, WITHIN)));
            assertEquals(0, stream.pending());
        }
        // the other tenant's own stream of the id is its session, untouched
        try (SseClient stream = SseClient.open(app, otherKey, s, null)) {
            List<String> lines = describe(stream.take(2, WITHIN));
            assertEquals(2, lines.size(), lines.toString());
            assertEquals(accepted(1, List.of(theirs), List.of("theirs")), lines.subList(0, 1));
        }
    }

    @Test
    void streams_waiting_for_their_sessions_share_one_lookup_per_poll_interval_and_no_stream_costs_nothing()
            throws Exception {
        int n = 50;
        HttpClient shared =
                HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
        List<String> sessions = new ArrayList<>();
        List<SseClient> streams = new ArrayList<>();
        try {
            for (int i = 0; i < n; i++) {
                sessions.add(newSession());
                streams.add(SseClient.open(shared, app, IngestApp.KEY, sessions.get(i), null));
                assertEquals(200, streams.get(i).status);
            }
            await().atMost(WITHIN).until(() -> streams.getLast().keepAlives() >= 1);
            Map<String, Long> before = StatementCounter.snapshot();
            long start = System.nanoTime();
            await().pollDelay(Duration.ofSeconds(2)).atMost(WITHIN).until(() -> true);
            Map<String, Long> counted = StatementCounter.delta(before, StatementCounter.snapshot());
            long tookMillis = (System.nanoTime() - start) / 1_000_000;
            // one lookup of all the waited-for ids per 50 ms poll interval, none per stream (the poller's other
            // statements serve streams of sessions that exist, which other tests of this JVM may still hold open)
            long allowed = tookMillis / 50 + 1;
            long total = StatementCounter.total(counted, "SELECT id, tenant_id, external_id");
            assertTrue(
                    total <= allowed, total + " lookups in " + tookMillis + " ms, at most " + allowed + ": " + counted);
            assertTrue(total >= 1, "the waiting streams are looked after: " + counted);

            String s = sessions.get(n / 2);
            String id = post(IngestApp.KEY, s, "at last");
            assertEquals(
                    accepted(1, List.of(id), List.of("at last")),
                    describe(streams.get(n / 2).take(1, WITHIN)));
            for (SseClient stream : streams) {
                assertEquals(0, stream.pending());
            }
        } finally {
            for (SseClient stream : streams) {
                stream.close();
            }
            shared.shutdownNow();
        }
        // once the server noticed every client gone (at its next keep-alive), no statement at all
        await().atMost(WITHIN)
                .until(() -> app.context
                                .getBean(MeterRegistry.class)
                                .get("settle.events.open")
                                .gauge()
                                .value()
                        == 0);
        Map<String, Long> before = StatementCounter.snapshot();
        await().pollDelay(Duration.ofSeconds(1)).atMost(WITHIN).until(() -> true);
        assertEquals(Map.of(), StatementCounter.delta(before, StatementCounter.snapshot()));
    }
}
