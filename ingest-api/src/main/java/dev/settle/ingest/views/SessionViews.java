package dev.settle.ingest.views;

import dev.settle.ingest.IngestSettings;
import dev.settle.ingest.http.ApiProblem;
import dev.settle.ingest.http.Paging;
import dev.settle.schema.DbTime;
import dev.settle.schema.SessionRules;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Read-only views of a session for the API: its state and its ordered conversation. */
@Component
public class SessionViews {
    /**
     * generating: a live lease; waiting: a debounce timer is armed; idle otherwise. Lease expiry is judged
     * on the database clock, like every lease decision. The armed timer, if any, comes with when it fires, why
     * ({@link SessionRules#TIMER_CAUSE}) and, while a typing signal holds it, until when. The debounce window in
     * effect is the one the debounce worker recorded for the session ({@code session_pacing}; none while the
     * adaptive window is off or before a message taught it something: a first message arms the base window and
     * records nothing). The token sums cover every turn of
     * the session, and apart those of its discarded turns. Parameters: default policy, then tenant and session id
     * twice.
     */
    static final String SESSION = "SELECT s.id, s.external_id, s.version, s.replied_version, "
            + SessionRules.EFFECTIVE_POLICY + " AS policy, "
            + SessionRules.LEASE_LIVE + " AS generating, "
            + SessionRules.TIMER_CAUSE + " AS timer_cause, " + """
                   COALESCE(u.prompt, 0) AS prompt, COALESCE(u.cached, 0) AS cached,
                   COALESCE(u.completion, 0) AS completion, COALESCE(u.estimated, 0) AS estimated,
                   COALESCE(u.d_prompt, 0) AS d_prompt, COALESCE(u.d_cached, 0) AS d_cached,
                   COALESCE(u.d_completion, 0) AS d_completion,
                   d.session_id IS NOT NULL AS waiting, d.fire_at AS timer_fire_at, d.held_until AS timer_held_until,
                   p.window_micros, p.window_cause
              FROM chat_session s
              LEFT JOIN debounce_timer d ON d.session_id = s.id
              LEFT JOIN session_pacing p ON p.session_id = s.id
              LEFT JOIN (SELECT t.session_id, SUM(t.prompt_tokens) AS prompt, SUM(t.cached_tokens) AS cached,
                                SUM(t.completion_tokens) AS completion, MAX(t.tokens_estimated) AS estimated,
                                SUM(CASE WHEN t.state = 'DISCARDED' THEN t.prompt_tokens ELSE 0 END) AS d_prompt,
                                SUM(CASE WHEN t.state = 'DISCARDED' THEN t.cached_tokens ELSE 0 END) AS d_cached,
                                SUM(CASE WHEN t.state = 'DISCARDED' THEN t.completion_tokens ELSE 0 END) AS d_completion
                           FROM chat_turn t JOIN chat_session x ON x.id = t.session_id
                          WHERE x.tenant_id = ? AND x.external_id = ?
                          GROUP BY t.session_id) u ON u.session_id = s.id
             WHERE s.tenant_id = ? AND s.external_id = ?""";

    /**
     * One page of the messages and tool steps in the order they happened: by (created_at, kind, id), a total
     * order (kind 0 is a message, 1 a tool step; ids are unique per kind). A page starts after the position
     * (created_at, kind, id) of the previous page's last item; each side reads at most the page size plus one,
     * so the union holds the first rows of the merged order. A tool step shows its live status.
     * Parameters: session, after created_at, after kind, after id, rows; then the same for the tool steps;
     * then rows.
     */
    static final String MESSAGES = """
            SELECT kind, uid, role, text, version, covers_version, tool_name, status, result, created_at, seq FROM (
                (SELECT 0 AS kind, m.message_uid AS uid, m.role, m.text, m.version, m.covers_version,
                        NULL AS tool_name, NULL AS status, NULL AS result, m.created_at, m.id AS seq
                   FROM chat_message m
                  WHERE m.session_id = ? AND (m.created_at, 0, m.id) > (CAST(? AS DATETIME(6)), ?, ?)
                  ORDER BY m.created_at, m.id LIMIT ?)
                UNION ALL
                (SELECT 1, CONCAT('tool_', t.id), 'tool', t.arguments_json, NULL, NULL,
                        t.tool_name, t.status, t.result, t.created_at, t.id
                   FROM tool_execution t
                  WHERE t.session_id = ? AND (t.created_at, 1, t.id) > (CAST(? AS DATETIME(6)), ?, ?)
                  ORDER BY t.created_at, t.id LIMIT ?)
            ) steps
            ORDER BY created_at, kind, seq
            LIMIT ?""";

    /** Parameters: session, after id (0 for the first page), rows. */
    static final String TURNS = """
            SELECT id, state, from_version, to_version, reason, model_calls, prompt_tokens, cached_tokens,
                   completion_tokens, tokens_estimated, started_at, ended_at
              FROM chat_turn WHERE session_id = ? AND id > ? ORDER BY id LIMIT ?""";

    /** The range of DATETIME(6), in microseconds since the epoch. */
    private static final long MIN_MICROS = micros(Instant.parse("1000-01-01T00:00:00Z"));

    private static final long MAX_MICROS = micros(Instant.parse("9999-12-31T23:59:59.999999Z"));
    /** Where the messages view starts: before any row (kind -1 sorts before both kinds). */
    private static final long[] FIRST = {MIN_MICROS, -1, 0};

    /** A row of the messages view and its position in the order, which is its cursor. */
    private record Step(Map<String, Object> body, long createdMicros, long kind, long seq) {
        String cursor() {
            return Paging.token(createdMicros, kind, seq);
        }
    }

    /**
     * The session's debounce timer: {@code armed} false when none; else when it fires, why, and {@code heldUntil}
     * (the end of the typing hold that sets the fire time, null when no hold does).
     */
    public record Debounce(boolean armed, Instant fireAt, Instant heldUntil, String cause) {
        static final Debounce NONE = new Debounce(false, null, null, null);

        Map<String, Object> body() {
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("armed", armed);
            if (armed) {
                body.put("fireAt", fireAt.toString());
                body.put("heldUntil", heldUntil == null ? null : heldUntil.toString());
                body.put("cause", cause);
            }
            return body;
        }
    }

    /**
     * Tokens billed for a set of turns: prompt, the part of it a provider's cache served, completion, and whether
     * any figure is an estimate (a call cut off before its usage was reported).
     */
    public record Tokens(long prompt, long cached, long completion, boolean estimated) {
        Map<String, Object> body() {
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("prompt", prompt);
            body.put("cached", cached);
            body.put("completion", completion);
            body.put("estimated", estimated);
            return body;
        }
    }

    /** @param tokens every turn's; @param discarded the discarded turns' (estimated: as for all turns) */
    public record SessionView(
            long pk,
            String sessionId,
            long version,
            long repliedVersion,
            String state,
            String policy,
            Tokens tokens,
            Tokens discarded,
            Debounce debounce,
            Long windowMs,
            String windowCause) {
        /** Prompt plus completion tokens of the discarded turns. */
        public long discardedTokens() {
            return discarded.prompt() + discarded.completion();
        }

        public Map<String, Object> body() {
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("sessionId", sessionId);
            body.put("version", version);
            body.put("repliedVersion", repliedVersion);
            body.put("state", state);
            body.put("policy", policy);
            body.put("discardedTokens", discardedTokens());
            Map<String, Object> tokenBody = tokens.body();
            Map<String, Object> discardedBody = discarded.body();
            discardedBody.remove("estimated");
            tokenBody.put("discarded", discardedBody);
            body.put("tokens", tokenBody);
            body.put("debounce", debounce.body());
            body.put("windowMs", windowMs);
            body.put("windowCause", windowCause);
            return body;
        }
    }

    private final JdbcTemplate jdbc;
    private final String defaultPolicy;

    public SessionViews(JdbcTemplate jdbc, IngestSettings settings) {
        this.jdbc = jdbc;
        this.defaultPolicy = settings.policy().defaultPolicy();
    }

    public SessionView session(String tenant, String sessionId) {
        List<SessionView> rows = jdbc.query(
                SESSION,
                (rs, i) -> new SessionView(
                        rs.getLong("id"),
                        rs.getString("external_id"),
                        rs.getLong("version"),
                        rs.getLong("replied_version"),
                        rs.getBoolean("generating") ? "generating" : rs.getBoolean("waiting") ? "waiting" : "idle",
                        rs.getString("policy"),
                        new Tokens(
                                rs.getLong("prompt"),
                                rs.getLong("cached"),
                                rs.getLong("completion"),
                                rs.getBoolean("estimated")),
                        new Tokens(
                                rs.getLong("d_prompt"),
                                rs.getLong("d_cached"),
                                rs.getLong("d_completion"),
                                rs.getBoolean("estimated")),
                        debounce(rs),
                        windowMillis(rs.getObject("window_micros", Long.class)),
                        rs.getString("window_cause")),
                defaultPolicy,
                tenant,
                sessionId,
                tenant,
                sessionId);
        if (rows.isEmpty()) {
            throw ApiProblem.notFound("no session " + sessionId);
        }
        return rows.getFirst();
    }

    private static Debounce debounce(ResultSet rs) throws SQLException {
        if (!rs.getBoolean("waiting")) {
            return Debounce.NONE;
        }
        String cause = rs.getString("timer_cause");
        return new Debounce(
                true,
                DbTime.instant(rs, "timer_fire_at"),
                "typing".equals(cause) ? DbTime.instant(rs, "timer_held_until") : null,
                cause);
    }

    private static Long windowMillis(Long micros) {
        return micros == null ? null : micros / 1_000;
    }

    /**
     * The position a page of messages starts after: that of the item whose cursor is {@code after} (the
     * {@code next} of the previous page), or before every item when null. A cursor that no page gave is a 400.
     */
    public static long[] messagesAfter(String after) {
        if (after == null) {
            return FIRST;
        }
        long[] from = Paging.untoken(after, 3);
        if (from[0] < MIN_MICROS || from[0] > MAX_MICROS || from[1] != 0 && from[1] != 1 || from[2] < 1) {
            throw Paging.invalidAfter();
        }
        return from;
    }

    /**
     * @param from see {@link #messagesAfter}
     * @return {@code messages} (a page) and {@code next}
     */
    public Map<String, Object> messages(long sessionPk, long[] from, int limit) {
        String fromTime = DbTime.utc(instant(from[0]));
        int rows = limit + 1;
        List<Step> steps = jdbc.query(
                MESSAGES,
                (rs, i) -> {
                    Map<String, Object> m = new LinkedHashMap<>();
                    String role = rs.getString("role");
                    if ("tool".equals(role)) {
                        m.put("stepId", rs.getString("uid"));
                        m.put("role", role);
                        m.put("tool", rs.getString("tool_name"));
                        m.put("arguments", JsonText.parseOrString(rs.getString("text")));
                        m.put("status", rs.getString("status"));
                        m.put("result", rs.getString("result"));
                    } else {
                        m.put("messageId", rs.getString("uid"));
                        m.put("role", role);
                        m.put("text", rs.getString("text"));
                        if ("user".equals(role)) {
                            m.put("version", rs.getLong("version"));
                        } else {
                            m.put("coversVersion", rs.getLong("covers_version"));
                        }
                    }
                    Instant created = DbTime.instant(rs, "created_at");
                    m.put("createdAt", created.toString());
                    return new Step(m, micros(created), rs.getLong("kind"), rs.getLong("seq"));
                },
                sessionPk,
                fromTime,
                from[1],
                from[2],
                rows,
                sessionPk,
                fromTime,
                from[1],
                from[2],
                rows,
                rows);
        return Paging.page("messages", steps, limit, Step::cursor, Step::body);
    }

    private static long micros(Instant instant) {
        return Math.addExact(Math.multiplyExact(instant.getEpochSecond(), 1_000_000L), instant.getNano() / 1_000);
    }

    private static Instant instant(long micros) {
        return Instant.ofEpochSecond(Math.floorDiv(micros, 1_000_000L), Math.floorMod(micros, 1_000_000L) * 1_000L);
    }

    /**
     * @param after the {@code next} of the previous page (a turn id), null for the first
     * @return {@code turns} (a page) and {@code next}
     */
    public Map<String, Object> turns(long sessionPk, Long after, int limit) {
        List<Map<String, Object>> turns = jdbc.query(
                TURNS,
                (rs, i) -> {
                    Map<String, Object> t = new LinkedHashMap<>();
                    t.put("turnId", rs.getLong("id"));
                    t.put("state", rs.getString("state"));
                    t.put("fromVersion", rs.getLong("from_version"));
                    t.put("toVersion", rs.getLong("to_version"));
                    t.put("reason", rs.getString("reason"));
                    t.put("modelCalls", rs.getInt("model_calls"));
                    t.put("promptTokens", rs.getInt("prompt_tokens"));
                    t.put("cachedTokens", rs.getInt("cached_tokens"));
                    t.put("completionTokens", rs.getInt("completion_tokens"));
                    t.put("tokensEstimated", rs.getBoolean("tokens_estimated"));
                    t.put("startedAt", DbTime.instant(rs, "started_at").toString());
                    Instant ended = DbTime.instant(rs, "ended_at");
                    t.put("endedAt", ended == null ? null : ended.toString());
                    return t;
                },
                sessionPk,
                after == null ? 0 : after,
                limit + 1);
        return Paging.page("turns", turns, limit, t -> t.get("turnId"));
    }
}
