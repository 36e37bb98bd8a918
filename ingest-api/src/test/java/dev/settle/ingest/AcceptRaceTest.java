package dev.settle.ingest;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.stream.Collectors;
import java.util.stream.LongStream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Many POSTs at once, released by a barrier on real threads: to the same sessions and to different ones, with
 * messages that must be refused among them. Every session ends with exact, gap-free versions and event seqs (one
 * {@code message.accepted} per message, seq and version in step, message times rising with versions), every refused
 * message fails alone with its own problem and stores nothing, and the others are accepted. Run with group commit off here and on in
 * {@link GroupCommitAcceptRaceTest}.
 */
class AcceptRaceTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final int MAX_UNANSWERED = 20;
    static IngestApp app;

    @BeforeAll
    static void start() {
        app = new IngestApp("race", props(false));
    }

    static Map<String, Object> props(boolean groupCommit) {
        return Map.of(
                "settle.limits.rate",
                "0",
                "settle.limits.max-unanswered",
                Integer.toString(MAX_UNANSWERED),
                "settle.ingest.group-commit",
                Boolean.toString(groupCommit),
                "settle.ingest.group-commit-max",
                "8");
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    static String sid(String prefix) {
        return prefix + "-" + UUID.randomUUID();
    }

    static HttpResponse<String> post(String session, String text, String... headers) {
        return app.post(
                "/v1/sessions/" + session + "/messages", "application/json", "{\"text\":\"" + text + "\"}", headers);
    }

    /** Runs every call at once (one thread each, released together) and returns the answers in call order. */
    static List<HttpResponse<String>> together(List<Callable<HttpResponse<String>>> calls) throws Exception {
        CyclicBarrier barrier = new CyclicBarrier(calls.size());
        List<Future<HttpResponse<String>>> futures = new ArrayList<>();
        try (ExecutorService pool = Executors.newFixedThreadPool(calls.size())) {
            for (Callable<HttpResponse<String>> call : calls) {
                futures.add(pool.submit(() -> {
                    barrier.await();
                    return call.call();
                }));
            }
        }
        List<HttpResponse<String>> answers = new ArrayList<>();
        for (Future<HttpResponse<String>> f : futures) {
            answers.add(f.get());
        }
        return answers;
    }

    static JsonNode json(HttpResponse<String> r) {
        return JSON.readTree(r.body());
    }

    /**
     * The session's messages have versions 1..n in insertion order, its events are seqs 1..n, each the
     * {@code message.accepted} of the message of the same version, and the session row says version n, event seq n.
     */
    static void assertExact(String session, int n) {
        Map<String, Object> row =
                app.jdbc.queryForMap("SELECT id, version, event_seq FROM chat_session WHERE external_id = ?", session);
        long pk = ((Number) row.get("id")).longValue();
        assertEquals(n, ((Number) row.get("version")).longValue(), session + " version");
        assertEquals(n, ((Number) row.get("event_seq")).longValue(), session + " event_seq");
        List<Long> versions = app.jdbc.queryForList(
                "SELECT version FROM chat_message WHERE session_id = ? ORDER BY id", Long.class, pk);
        assertEquals(LongStream.rangeClosed(1, n).boxed().toList(), versions, session + " message versions");
        List<Map<String, Object>> events = app.jdbc.queryForList(
                "SELECT e.seq, e.type, e.data, m.message_uid, m.version FROM session_event e "
                        + "JOIN chat_message m ON m.session_id = e.session_id AND m.version = e.seq "
                        + "WHERE e.session_id = ? ORDER BY e.seq",
                pk);
        assertEquals(n, events.size(), session + " events");
        for (Map<String, Object> e : events) {
            JsonNode data = JSON.readTree((String) e.get("data"));
            assertEquals("message.accepted", e.get("type"));
            assertEquals(e.get("message_uid"), data.get("messageId").asString(), session + " event " + e.get("seq"));
            assertEquals(
                    ((Number) e.get("version")).longValue(), data.get("version").asLong());
        }
        // under contention too: a later version never carries an earlier time (MessageTimes)
        List<java.time.LocalDateTime> times = app.jdbc.queryForList(
                "SELECT created_at FROM chat_message WHERE session_id = ? ORDER BY version",
                java.time.LocalDateTime.class,
                pk);
        for (int i = 1; i < times.size(); i++) {
            assertTrue(times.get(i).isAfter(times.get(i - 1)), session + " times rise with versions: " + times);
        }
    }

    @Test
    void many_posts_at_once_to_the_same_and_to_different_sessions_all_commit_with_exact_versions() throws Exception {
        for (int round = 0; round < 3; round++) {
            List<String> shared = List.of(sid("same"), sid("same"), sid("same"));
            List<String> single = new ArrayList<>();
            List<String> targets = new ArrayList<>();
            for (int i = 0; i < 8; i++) {
                targets.addAll(shared);
            }
            for (int i = 0; i < 16; i++) {
                single.add(sid("one"));
            }
            targets.addAll(single);
            List<Callable<HttpResponse<String>>> calls = new ArrayList<>();
            for (int i = 0; i < targets.size(); i++) {
                String s = targets.get(i);
                String text = "m" + i;
                calls.add(() -> post(s, text));
            }
            List<HttpResponse<String>> answers = together(calls);
            Map<String, Set<Long>> versions = new HashMap<>();
            for (int i = 0; i < answers.size(); i++) {
                HttpResponse<String> r = answers.get(i);
                assertEquals(202, r.statusCode(), r.body());
                assertEquals(targets.get(i), json(r).get("sessionId").asString());
                versions.computeIfAbsent(targets.get(i), k -> new HashSet<>())
                        .add(json(r).get("version").asLong());
            }
            for (String s : shared) {
                assertEquals(
                        LongStream.rangeClosed(1, 8).boxed().collect(Collectors.toSet()),
                        versions.get(s),
                        "round " + round);
                assertExact(s, 8);
            }
            for (String s : single) {
                assertEquals(Set.of(1L), versions.get(s));
                assertExact(s, 1);
            }
        }
    }

    @Test
    void two_tenants_posting_to_the_same_session_id_at_once_each_get_their_own_session() throws Exception {
        String otherTenant = "t" + UUID.randomUUID().toString().substring(0, 8);
        HttpResponse<String> created =
                app.call("POST", "/v1/admin/tenants", IngestApp.ADMIN_KEY, "{\"id\":\"" + otherTenant + "\"}");
        assertEquals(201, created.statusCode(), created.body());
        String otherKey = json(created).get("apiKey").get("key").asString();
        String s = sid("both");
        List<Callable<HttpResponse<String>>> calls = new ArrayList<>();
        for (int i = 0; i < 8; i++) {
            String text = "m" + i;
            calls.add(() -> post(s, text, "Idempotency-Key", "k" + text));
            calls.add(() -> app.send(java.net.http.HttpRequest.newBuilder(
                            java.net.URI.create(app.base + "/v1/sessions/" + s + "/messages"))
                    .header("Content-Type", "application/json")
                    .header("Authorization", "Bearer " + otherKey)
                    .header("Idempotency-Key", "k" + text)
                    .POST(java.net.http.HttpRequest.BodyPublishers.ofString("{\"text\":\"other " + text + "\"}"))
                    .build()));
        }
        for (HttpResponse<String> r : together(calls)) {
            assertEquals(202, r.statusCode(), r.body());
        }
        for (String tenant : List.of("default", otherTenant)) {
            assertEquals(
                    LongStream.rangeClosed(1, 8).boxed().toList(),
                    app.jdbc.queryForList(
                            "SELECT m.version FROM chat_message m JOIN chat_session x ON x.id = m.session_id "
                                    + "WHERE x.tenant_id = ? AND x.external_id = ? ORDER BY m.version",
                            Long.class,
                            tenant,
                            s),
                    tenant);
        }
        assertEquals(
                8,
                app.jdbc.queryForObject(
                        "SELECT COUNT(*) FROM chat_message m JOIN chat_session x ON x.id = m.session_id "
                                + "WHERE x.tenant_id = ? AND x.external_id = ? AND m.text LIKE 'other %'",
                        Integer.class, otherTenant, s));
    }

    @Test
    void refused_messages_among_concurrent_posts_fail_alone_and_store_nothing() throws Exception {
        String full = sid("full");
        for (int i = 1; i <= MAX_UNANSWERED; i++) {
            assertEquals(202, post(full, "fill " + i).statusCode());
        }
        String rejecting = sid("reject");
        assertEquals(
                200,
                app.call("PUT", "/v1/sessions/" + rejecting, IngestApp.KEY, "{\"policy\":\"reject\"}")
                        .statusCode());
        assertEquals(202, post(rejecting, "first, unanswered").statusCode());
        String keyed = sid("keyed");
        String busy = sid("busy");

        List<String> what = new ArrayList<>();
        List<Callable<HttpResponse<String>>> calls = new ArrayList<>();
        for (int i = 0; i < 4; i++) {
            what.add("full");
            calls.add(() -> post(full, "one too many"));
            what.add("reject");
            calls.add(() -> post(rejecting, "while busy"));
            what.add("same-key");
            calls.add(() -> post(keyed, "same body", "Idempotency-Key", "k"));
            what.add("busy");
            int n = i;
            calls.add(() -> post(busy, "busy " + n));
        }
        for (int i = 0; i < 2; i++) {
            what.add("other-body");
            calls.add(() -> post(keyed, "another body", "Idempotency-Key", "k"));
        }
        String before = storedIn(full, rejecting);
        List<HttpResponse<String>> answers = together(calls);

        Map<String, Set<String>> keyedAnswers = new HashMap<>(); // "same-key" / "other-body" -> status + body
        for (int i = 0; i < answers.size(); i++) {
            HttpResponse<String> r = answers.get(i);
            switch (what.get(i)) {
                case "full" -> {
                    assertEquals(429, r.statusCode(), r.body());
                    assertTrue(r.body().contains("too-many-unanswered"), r.body());
                    assertEquals("5", r.headers().firstValue("Retry-After").orElse(""));
                }
                case "reject" -> {
                    assertEquals(409, r.statusCode(), r.body());
                    assertTrue(r.body().contains("session-busy"), r.body());
                }
                case "busy" -> assertEquals(202, r.statusCode(), r.body());
                case "same-key", "other-body" -> {
                    String answer = r.statusCode() == 202 ? "202 " + r.body() : Integer.toString(r.statusCode());
                    keyedAnswers
                            .computeIfAbsent(what.get(i), k -> new HashSet<>())
                            .add(answer);
                    if (r.statusCode() != 202) {
                        assertTrue(r.body().contains("idempotency-key-reused"), r.body());
                    }
                }
                default -> throw new AssertionError(what.get(i));
            }
        }
        // whichever body took the key first: all its posts got the same 202, all posts of the other body 422
        Set<String> same = keyedAnswers.get("same-key");
        Set<String> other = keyedAnswers.get("other-body");
        assertEquals(1, same.size(), same.toString());
        assertEquals(1, other.size(), other.toString());
        assertTrue(
                (same.iterator().next().startsWith("202 ") && other.equals(Set.of("422")))
                        || (other.iterator().next().startsWith("202 ") && same.equals(Set.of("422"))),
                keyedAnswers.toString());
        assertExact(keyed, 1);
        assertExact(busy, 4);
        assertExact(full, MAX_UNANSWERED);
        assertExact(rejecting, 1);
        assertEquals(before, storedIn(full, rejecting), "the refused messages stored nothing");
    }

    /** The ids of the messages stored in two sessions, in the order they were stored. */
    String storedIn(String first, String second) {
        return app.jdbc
                .queryForList(
                        "SELECT m.message_uid FROM chat_message m JOIN chat_session s ON s.id = m.session_id "
                                + "WHERE s.external_id IN (?, ?) ORDER BY m.id",
                        String.class,
                        first,
                        second)
                .toString();
    }
}
