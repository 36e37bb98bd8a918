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
            SELECT s.id, s.external_id, s.version, s.replied_version,
                   (s.lease_token IS NOT NULL AND s.lease_expires_at > UTC_TIMESTAMP(6)) AS generating,
                   EXISTS (SELECT 1 FROM debounce_timer t WHERE t.session_id = s.id) AS waiting
              FROM chat_session s
             WHERE s.tenant_id = ? AND s.external_id = ?""";

    static final String MESSAGES = """
            SELECT m.message_uid, m.role, m.text, m.version, m.covers_version, m.created_at
              FROM chat_message m
             WHERE m.session_id = ?
             ORDER BY m.id""";

    public record SessionView(long pk, String sessionId, long version, long repliedVersion, String state) {
        Map<String, Object> body() {
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("sessionId", sessionId);
            body.put("version", version);
            body.put("repliedVersion", repliedVersion);
            body.put("state", state);
            return body;
        }
    }

    private final JdbcTemplate jdbc;

    public SessionViews(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    public SessionView session(String tenant, String sessionId) {
        List<SessionView> rows = jdbc.query(SESSION, (rs, i) -> new SessionView(rs.getLong("id"),
                rs.getString("external_id"), rs.getLong("version"), rs.getLong("replied_version"),
                rs.getBoolean("generating") ? "generating" : rs.getBoolean("waiting") ? "waiting" : "idle"),
                tenant, sessionId);
        if (rows.isEmpty()) {
            throw ApiProblem.notFound("no session " + sessionId);
        }
        return rows.getFirst();
    }

    public List<Map<String, Object>> messages(long sessionPk) {
        return jdbc.query(MESSAGES, (rs, i) -> {
            Map<String, Object> m = new LinkedHashMap<>();
            m.put("messageId", rs.getString("message_uid"));
            String role = rs.getString("role");
            m.put("role", role);
            m.put("text", rs.getString("text"));
            if ("user".equals(role)) {
                m.put("version", rs.getLong("version"));
            } else {
                m.put("coversVersion", rs.getLong("covers_version"));
            }
            Instant created = DbTime.instant(rs, "created_at");
            m.put("createdAt", created.toString());
            return m;
        }, sessionPk);
    }
}
