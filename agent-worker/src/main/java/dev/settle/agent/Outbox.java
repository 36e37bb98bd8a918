package dev.settle.agent;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import tools.jackson.databind.json.JsonMapper;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The webhook outbox: a delivery row written in the caller's transaction (the reply commit, or the turn's
 * failure), so a committed reply always has its delivery and a rolled-back one never does. The envelope
 * and its {@code webhook-id} are fixed here, once, and reused by every retry.
 */
@Component
public class Outbox {
    static final String INSERT = """
            INSERT INTO webhook_delivery (webhook_id, session_id, event_type, payload, status, next_attempt_at, created_at)
            VALUES (?, ?, ?, ?, 'PENDING', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))""";

    static final String EXTERNAL_ID = "SELECT external_id FROM chat_session WHERE id = ?";

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private final JdbcTemplate jdbc;

    public Outbox(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    public void replyCreated(long sessionId, String replyId, String text, Conversation.Snapshot turn) {
        Map<String, Object> data = data(sessionId, turn);
        data.put("replyId", replyId);
        data.put("text", text);
        insert("reply.created", replyId, sessionId, data);
    }

    public void replyFailed(long sessionId, long turnId, String error, Conversation.Snapshot turn) {
        Map<String, Object> data = data(sessionId, turn);
        data.put("turnId", turnId);
        data.put("error", error);
        insert("reply.failed", "turn_" + turnId, sessionId, data);
    }

    private Map<String, Object> data(long sessionId, Conversation.Snapshot turn) {
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("sessionId", jdbc.queryForObject(EXTERNAL_ID, String.class, sessionId));
        data.put("coversVersion", turn.toVersion());
        data.put("messageIds", turn.pendingIds());
        return data;
    }

    private void insert(String type, String id, long sessionId, Map<String, Object> data) {
        Map<String, Object> envelope = new LinkedHashMap<>();
        envelope.put("type", type);
        envelope.put("timestamp", Instant.now().toString());
        envelope.put("data", data);
        jdbc.update(INSERT, "wh_" + id, sessionId, type, JSON.writeValueAsString(envelope));
    }
}
