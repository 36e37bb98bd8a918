package dev.settle.ingest;

import dev.settle.schema.DbTime;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Read-only views of a session for the API: its state and its ordered conversation. */
@Component
public class SessionViews {
    /**
     * generating: a live lease; waiting: a debounce timer is armed; idle otherwise. Lease expiry is judged
     * on the database clock, like every lease decision.
     */
    static final String SESSION = """
            SELECT s.id, s.external_id, s.version, s.replied_version, COALESCE(s.policy, t.default_policy, ?) AS policy,
                   (SELECT COALESCE(SUM(t.prompt_tokens + t.completion_tokens), 0) FROM chat_turn t
                     WHERE t.session_id = s.id AND t.state = 'DISCARDED') AS discarded_tokens,
                   (s.lease_token IS NOT NULL AND s.lease_expires_at > UTC_TIMESTAMP(6)) AS generating,
                   EXISTS (SELECT 1 FROM debounce_timer t WHERE t.session_id = s.id) AS waiting
              FROM chat_session s LEFT JOIN tenant t ON t.id = s.tenant_id
             WHERE s.tenant_id = ? AND s.external_id = ?""";

    /** Messages and tool steps in the order they happened; a tool step shows its live status (seed 004). */
    static final String MESSAGES = """
            SELECT kind, uid, role, text, version, covers_version, tool_name, status, result, created_at, seq FROM (
                SELECT 0 AS kind, m.message_uid AS uid, m.role, m.text, m.version, m.covers_version,
                       NULL AS tool_name, NULL AS status, NULL AS result, m.created_at, m.id AS seq
                  FROM chat_message m WHERE m.session_id = ?
                UNION ALL
                SELECT 1, CONCAT('tool_', t.id), 'tool', t.arguments_json, NULL, NULL,
                       t.tool_name, t.status, t.result, t.created_at, t.id
                  FROM tool_execution t WHERE t.session_id = ?
            ) steps
            ORDER BY created_at, kind, seq""";

    static final String TURNS = """
            SELECT id, state, from_version, to_version, reason, model_calls, prompt_tokens, completion_tokens,
                   tokens_estimated, started_at, ended_at
              FROM chat_turn WHERE session_id = ? ORDER BY id""";

    public record SessionView(long pk, String sessionId, long version, long repliedVersion, String state,
                              String policy, long discardedTokens) {
        Map<String, Object> body() {
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("sessionId", sessionId);
            body.put("version", version);
            body.put("repliedVersion", repliedVersion);
            body.put("state", state);
            body.put("policy", policy);
            body.put("discardedTokens", discardedTokens);
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
        List<SessionView> rows = jdbc.query(SESSION, (rs, i) -> new SessionView(rs.getLong("id"),
                rs.getString("external_id"), rs.getLong("version"), rs.getLong("replied_version"),
                rs.getBoolean("generating") ? "generating" : rs.getBoolean("waiting") ? "waiting" : "idle",
                rs.getString("policy"), rs.getLong("discarded_tokens")),
                defaultPolicy, tenant, sessionId);
        if (rows.isEmpty()) {
            throw ApiProblem.notFound("no session " + sessionId);
        }
        return rows.getFirst();
    }

    public List<Map<String, Object>> messages(long sessionPk) {
        return jdbc.query(MESSAGES, (rs, i) -> {
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
            return m;
        }, sessionPk, sessionPk);
    }

    public List<Map<String, Object>> turns(long sessionPk) {
        return jdbc.query(TURNS, (rs, i) -> {
            Map<String, Object> t = new LinkedHashMap<>();
            t.put("turnId", rs.getLong("id"));
            t.put("state", rs.getString("state"));
            t.put("fromVersion", rs.getLong("from_version"));
            t.put("toVersion", rs.getLong("to_version"));
            t.put("reason", rs.getString("reason"));
            t.put("modelCalls", rs.getInt("model_calls"));
            t.put("promptTokens", rs.getInt("prompt_tokens"));
            t.put("completionTokens", rs.getInt("completion_tokens"));
            t.put("tokensEstimated", rs.getBoolean("tokens_estimated"));
            t.put("startedAt", DbTime.instant(rs, "started_at").toString());
            Instant ended = DbTime.instant(rs, "ended_at");
            t.put("endedAt", ended == null ? null : ended.toString());
            return t;
        }, sessionPk);
    }
}
