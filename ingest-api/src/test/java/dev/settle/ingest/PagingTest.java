package dev.settle.ingest;

import dev.settle.schema.DbTime;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.URLEncoder;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.function.Function;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The four lists page by cursor: following {@code next} until it is null yields every item exactly once, in the
 * list's order, with pages of {@code limit} (default 100, at most 500); a bad {@code limit} or {@code after} is a
 * 400 problem. Each list holds {@value #ROWS} rows, written straight into the tables where the workers write them.
 */
class PagingTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final int ROWS = 523;
    static final String SESSION = "paged";
    static IngestApp app;
    static long sessionPk;
    /** The conversation as the unpaged view orders it: by (created_at, kind, id), messages before tool steps. */
    static List<String> conversation;

    @BeforeAll
    static void start() {
        // a walk is hundreds of requests in a second: the tenant's request rate (a policy tested in LimitsTest) is off
        app = new IngestApp("paging", java.util.Map.of("settle.limits.rate", "0"));
        assertEquals(
                200,
                app.call("PUT", "/v1/sessions/" + SESSION, IngestApp.KEY, "{\"policy\":\"merge\"}")
                        .statusCode());
        sessionPk = app.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, SESSION);
        conversation = writeConversation();
        for (int i = 1; i <= ROWS; i++) {
            app.jdbc.update("""
                    INSERT INTO chat_turn (session_id, lease_token, lease_epoch, from_version, to_version, state, started_at)
                    VALUES (?, 'token', 1, ?, ?, 'DISCARDED', UTC_TIMESTAMP(6))""", sessionPk, i, i);
            app.jdbc.update("""
                    INSERT INTO ledger_entry (session_id, execution_id, amount, category, note, created_at)
                    VALUES (?, ?, 1.00, 'food', ?, UTC_TIMESTAMP(6))""", sessionPk, i, "entry " + i);
            app.jdbc.update("""
                    INSERT INTO webhook_delivery (webhook_id, session_id, event_type, endpoint_url, payload, status,
                                                  attempts, next_attempt_at, created_at)
                    VALUES (?, ?, 'reply.created', 'https://hooks.example.com/settle', '{}', 'FAILED', 1,
                            UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))""", "wh_paged_" + i, sessionPk);
        }
    }

    /**
     * Messages and tool steps at interleaved times, with ties the order must break: a tool step written before a
     * message of the same instant (the message comes first), two messages of one instant (by id), two tool steps of
     * one instant (by id). Returns their ids in the unpaged view's order.
     */
    static List<String> writeConversation() {
        record Item(String uid, Instant at, int kind, long id) {}
        List<Item> items = new ArrayList<>();
        Instant t0 = Instant.parse("2026-06-01T10:00:00.000001Z");
        int version = 0;
        for (int i = 0; items.size() < ROWS; i++) {
            Instant at = t0.plusMillis(i / 3 * 7).plusNanos(i % 3 == 0 ? 0 : 1_000);
            if (i % 4 == 0) {
                long tool = toolStep(at, "first-" + i);
                items.add(new Item("tool_" + tool, at, 1, tool));
            }
            String uid = "msg-" + i;
            if (i % 5 == 4) {
                app.jdbc.update("""
                        INSERT INTO chat_message (message_uid, session_id, role, text, covers_from, covers_version, created_at)
                        VALUES (?, ?, 'assistant', ?, ?, ?, ?)""", uid, sessionPk, "reply " + i, version, version, DbTime.utc(at));
            } else {
                version++;
                app.jdbc.update("""
                        INSERT INTO chat_message (message_uid, session_id, role, text, version, created_at)
                        VALUES (?, ?, 'user', ?, ?, ?)""", uid, sessionPk, "message " + i, version, DbTime.utc(at));
            }
            items.add(new Item(
                    uid,
                    at,
                    0,
                    app.jdbc.queryForObject("SELECT id FROM chat_message WHERE message_uid = ?", Long.class, uid)));
            if (i % 6 == 1) {
                String twin = "twin-" + i;
                version++;
                app.jdbc.update("""
                        INSERT INTO chat_message (message_uid, session_id, role, text, version, created_at)
                        VALUES (?, ?, 'user', ?, ?, ?)""", twin, sessionPk, "twin " + i, version, DbTime.utc(at));
                items.add(new Item(
                        twin,
                        at,
                        0,
                        app.jdbc.queryForObject(
                                "SELECT id FROM chat_message WHERE message_uid = ?", Long.class, twin)));
            }
            if (i % 3 == 2) {
                long a = toolStep(at, "a-" + i);
                long b = toolStep(at, "b-" + i);
                items.add(new Item("tool_" + a, at, 1, a));
                items.add(new Item("tool_" + b, at, 1, b));
            }
        }
        return items.stream()
                .sorted(Comparator.comparing(Item::at)
                        .thenComparingInt(Item::kind)
                        .thenComparingLong(Item::id))
                .map(Item::uid)
                .toList();
    }

    static long toolStep(Instant at, String call) {
        app.jdbc.update("""
                INSERT INTO tool_execution (session_id, turn_id, span_from, call_id, tool_name, arguments_json, ordinal,
                                            side_effect, status, result, lease_token, created_at)
                VALUES (?, 1, 1, ?, 'lookup', '{"q":1}', 0, FALSE, 'COMPLETED', 'ok', 'token', ?)""", sessionPk, call, DbTime.utc(at));
        return app.jdbc.queryForObject("SELECT MAX(id) FROM tool_execution WHERE call_id = ?", Long.class, call);
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    record Walk(List<String> ids, List<Integer> pageSizes) {}

    /** Follows {@code next} from the first page until it is null. */
    static Walk walk(String path, String field, String limit, Function<JsonNode, String> id) {
        List<String> ids = new ArrayList<>();
        List<Integer> sizes = new ArrayList<>();
        String after = null;
        do {
            String query = (path.contains("?") ? "&" : "?")
                    + (limit == null ? "" : "limit=" + limit)
                    + (after == null
                            ? ""
                            : (limit == null ? "" : "&") + "after=" + URLEncoder.encode(after, StandardCharsets.UTF_8));
            HttpResponse<String> r = app.get(path + query);
            assertEquals(200, r.statusCode(), r.body());
            JsonNode page = JSON.readTree(r.body());
            page.get(field).forEach(item -> ids.add(id.apply(item)));
            sizes.add(page.get(field).size());
            assertTrue(page.has("next"), "every page says whether another follows: " + r.body());
            after = page.get("next").isNull() ? null : page.get("next").asString();
            assertTrue(sizes.size() <= ROWS + 1, "the walk does not end");
        } while (after != null);
        return new Walk(ids, sizes);
    }

    /** Pages of {@code limit} rows, the last one holding the rest (a full last page says it is the last). */
    static List<Integer> sizes(int total, int limit) {
        List<Integer> sizes = new ArrayList<>();
        for (int left = total; left > 0; left -= limit) {
            sizes.add(Math.min(limit, left));
        }
        return sizes;
    }

    static List<String> range(int from, int to, Function<Integer, String> id) {
        List<String> ids = new ArrayList<>();
        if (from <= to) {
            for (int i = from; i <= to; i++) {
                ids.add(id.apply(i));
            }
        } else {
            for (int i = from; i >= to; i--) {
                ids.add(id.apply(i));
            }
        }
        return ids;
    }

    static String messageId(JsonNode m) {
        return m.has("stepId") ? m.get("stepId").asString() : m.get("messageId").asString();
    }

    @Test
    void messages_and_tool_steps_page_in_the_unpaged_order_each_exactly_once() {
        assertTrue(conversation.size() > 500, "more rows than the largest page");
        String path = "/v1/sessions/" + SESSION + "/messages";
        for (String limit : new String[] {"7", null, "500"}) {
            Walk walk = walk(path, "messages", limit, PagingTest::messageId);
            assertEquals(conversation, walk.ids(), "limit " + limit);
            assertEquals(
                    sizes(conversation.size(), limit == null ? 100 : Integer.parseInt(limit)),
                    walk.pageSizes(),
                    "limit " + limit);
        }
        // the item's fields are unchanged by paging
        JsonNode first = JSON.readTree(app.get(path + "?limit=1").body());
        assertEquals(1, first.get("messages").size());
        assertTrue(first.get("next").isString());
    }

    @Test
    void turns_page_oldest_first_each_exactly_once() {
        List<String> all = app
                .jdbc
                .queryForList("SELECT id FROM chat_turn WHERE session_id = ? ORDER BY id", Long.class, sessionPk)
                .stream()
                .map(String::valueOf)
                .toList();
        assertEquals(ROWS, all.size());
        for (String limit : new String[] {"13", null, "500"}) {
            Walk walk = walk(
                    "/v1/sessions/" + SESSION + "/turns",
                    "turns",
                    limit,
                    t -> t.get("turnId").asString());
            assertEquals(all, walk.ids(), "limit " + limit);
            assertEquals(
                    sizes(ROWS, limit == null ? 100 : Integer.parseInt(limit)), walk.pageSizes(), "limit " + limit);
        }
    }

    @Test
    void ledger_entries_page_oldest_first_each_exactly_once() {
        List<String> all = range(1, ROWS, i -> "entry " + i);
        for (String limit : new String[] {"13", null, "500"}) {
            Walk walk = walk(
                    "/v1/ledger/entries?sessionId=" + SESSION,
                    "entries",
                    limit,
                    e -> e.get("note").asString());
            assertEquals(all, walk.ids(), "limit " + limit);
            assertEquals(
                    sizes(ROWS, limit == null ? 100 : Integer.parseInt(limit)), walk.pageSizes(), "limit " + limit);
        }
    }

    @Test
    void webhook_deliveries_page_newest_first_each_exactly_once_by_after_and_by_before() {
        List<String> all = range(ROWS, 1, i -> "wh_paged_" + i);
        String path = "/v1/webhooks/deliveries?sessionId=" + SESSION;
        for (String limit : new String[] {"13", null, "500"}) {
            Walk walk = walk(path, "deliveries", limit, d -> d.get("webhookId").asString());
            assertEquals(all, walk.ids(), "limit " + limit);
            assertEquals(
                    sizes(ROWS, limit == null ? 100 : Integer.parseInt(limit)), walk.pageSizes(), "limit " + limit);
        }
        // before / nextBefore: the same cursor under its earlier name
        List<String> ids = new ArrayList<>();
        String before = null;
        do {
            JsonNode page = JSON.readTree(app.get(path + "&limit=200" + (before == null ? "" : "&before=" + before))
                    .body());
            page.get("deliveries").forEach(d -> ids.add(d.get("webhookId").asString()));
            assertEquals(page.get("next"), page.get("nextBefore"));
            before = page.get("nextBefore").isNull()
                    ? null
                    : page.get("nextBefore").asString();
        } while (before != null);
        assertEquals(all, ids);
    }

    @ParameterizedTest(name = "{0}")
    @ValueSource(
            strings = {
                "/v1/sessions/" + SESSION + "/messages",
                "/v1/sessions/" + SESSION + "/turns",
                "/v1/ledger/entries?sessionId=" + SESSION,
                "/v1/webhooks/deliveries?sessionId=" + SESSION
            })
    void bad_limits_and_cursors_are_a_400_problem(String path) {
        String sep = path.contains("?") ? "&" : "?";
        for (String limit : new String[] {"0", "-1", "abc", "501", "99999999999999999999", "", "1.5"}) {
            assertProblem(path + sep + "limit=" + limit, "invalid-limit");
        }
        for (String after : new String[] {"0", "-1", "abc", "", "99999999999999999999", "%20"}) {
            assertProblem(path + sep + "after=" + after, "invalid-after");
        }
        assertEquals(200, app.get(path + sep + "limit=500").statusCode(), "the maximum is allowed");
    }

    @Test
    void a_message_cursor_no_page_gave_is_a_400_problem() {
        String path = "/v1/sessions/" + SESSION + "/messages?after=";
        // the cursor's form (micros.kind.id, base64url) with values no row has: kind 2, id 0, two parts, times
        // outside DATETIME's range; then text that is no cursor at all
        for (String after : new String[] {
            token("1.2.3"),
            token("1.0.0"),
            token("1.0"),
            token(Long.MAX_VALUE + ".0.1"),
            token(Long.MIN_VALUE + ".0.1"),
            token("x.0.1"),
            "MTIzNDU2Nzg5MC4wLjE=x",
            "-._~"
        }) {
            assertProblem(path + URLEncoder.encode(after, StandardCharsets.UTF_8), "invalid-after");
        }
        assertProblem("/v1/webhooks/deliveries?after=5&before=5", "invalid-after");
    }

    static String token(String text) {
        return java.util.Base64.getUrlEncoder()
                .withoutPadding()
                .encodeToString(text.getBytes(StandardCharsets.US_ASCII));
    }

    static void assertProblem(String path, String type) {
        HttpResponse<String> r = app.get(path);
        assertEquals(400, r.statusCode(), path + ": " + r.body());
        assertEquals(
                "application/problem+json",
                r.headers().firstValue("Content-Type").orElse("").split(";")[0]);
        assertEquals(
                "https://settle.dev/problems/" + type,
                JSON.readTree(r.body()).get("type").asString(),
                path);
    }
}
