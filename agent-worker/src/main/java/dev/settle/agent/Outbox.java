package dev.settle.agent;

import dev.settle.agent.webhook.DefaultEndpoint;
import dev.settle.agent.webhook.RetrySchedule;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import tools.jackson.databind.json.JsonMapper;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The webhook outbox: a delivery row written in the caller's transaction (the reply commit, or the turn's
 * failure), so a committed reply always has its delivery and a rolled-back one never does. The envelope,
 * its {@code webhook-id} and the endpoint it goes to are fixed here, once, and reused by every retry; the first
 * attempt is due after the schedule's first delay.
 */
@Component
public class Outbox {
    static final String INSERT = """
            INSERT INTO webhook_delivery (webhook_id, session_id, event_type, endpoint_url, payload, status,
                                          next_attempt_at, created_at)
            VALUES (?, ?, ?, ?, ?, 'PENDING', UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, UTC_TIMESTAMP(6))""";

    static final String EXTERNAL_ID = "SELECT external_id FROM chat_session WHERE id = ?";

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private final JdbcTemplate jdbc;
    private final DefaultEndpoint endpoint;
    private final RetrySchedule schedule;

    public Outbox(JdbcTemplate jdbc, DefaultEndpoint endpoint, RetrySchedule schedule) {
        this.jdbc = jdbc;
        this.endpoint = endpoint;
        this.schedule = schedule;
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
        jdbc.update(INSERT, "wh_" + id, sessionId, type, endpoint.url(), JSON.writeValueAsString(envelope),
                schedule.first().toNanos() / 1000);
    }
}
