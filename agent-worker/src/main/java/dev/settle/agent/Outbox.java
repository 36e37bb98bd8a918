package dev.settle.agent;

import dev.settle.agent.webhook.DefaultEndpoint;
import dev.settle.agent.webhook.RetrySchedule;
import dev.settle.agent.webhook.OutboxWritten;
import org.springframework.context.ApplicationEventPublisher;
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
 * attempt is due after the schedule's first delay. The endpoint is the session's tenant's webhook URL, or the
 * deployment's {@code SETTLE_WEBHOOK_URL} when the tenant has none (always so for the tenant {@code default});
 * the SSRF guard checks it on every attempt like any other. A turn reads both with its snapshot
 * ({@link Conversation#SNAPSHOT}), so the commit does not look them up again; {@link #SESSION} serves callers
 * without one.
 */
@Component
public class Outbox {
    static final String INSERT = """
            INSERT INTO webhook_delivery (webhook_id, session_id, event_type, endpoint_url, payload, status,
                                          next_attempt_at, created_at)
            VALUES (?, ?, ?, ?, ?, 'PENDING', UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, UTC_TIMESTAMP(6))""";

    /** The session's client-facing id and its tenant's webhook URL (null = the deployment's). */
    static final String SESSION = """
            SELECT s.external_id, t.webhook_url
              FROM chat_session s LEFT JOIN tenant t ON t.id = s.tenant_id WHERE s.id = ?""";

    /** The session's client-facing id and its tenant's webhook URL (null = the deployment's). */
    public record Target(String externalId, String url) {
    }

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private final JdbcTemplate jdbc;
    private final DefaultEndpoint endpoint;
    private final RetrySchedule schedule;
    private final ApplicationEventPublisher events;

    public Outbox(JdbcTemplate jdbc, DefaultEndpoint endpoint, RetrySchedule schedule, ApplicationEventPublisher events) {
        this.jdbc = jdbc;
        this.endpoint = endpoint;
        this.schedule = schedule;
        this.events = events;
    }

    public void replyCreated(long sessionId, String replyId, String text, Conversation.Snapshot turn) {
        Target target = turn.target() != null ? turn.target() : target(sessionId);
        Map<String, Object> data = data(target, turn);
        data.put("replyId", replyId);
        data.put("text", text);
        insert("reply.created", replyId, sessionId, target, data);
    }

    public void replyFailed(long sessionId, long turnId, String error, Conversation.Snapshot turn) {
        Target target = turn.target() != null ? turn.target() : target(sessionId);
        Map<String, Object> data = data(target, turn);
        data.put("turnId", turnId);
        data.put("error", error);
        insert("reply.failed", "turn_" + turnId, sessionId, target, data);
    }

    private Map<String, Object> data(Target target, Conversation.Snapshot turn) {
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("sessionId", target.externalId());
        data.put("coversVersion", turn.toVersion());
        data.put("messageIds", turn.pendingIds());
        return data;
    }

    private Target target(long sessionId) {
        return jdbc.queryForObject(SESSION, (rs, i) -> new Target(rs.getString("external_id"),
                rs.getString("webhook_url")), sessionId);
    }

    private void insert(String type, String id, long sessionId, Target target, Map<String, Object> data) {
        Map<String, Object> envelope = new LinkedHashMap<>();
        envelope.put("type", type);
        envelope.put("timestamp", Instant.now().toString());
        envelope.put("data", data);
        jdbc.update(INSERT, "wh_" + id, sessionId, type,
                target.url() != null ? target.url() : endpoint.url(), JSON.writeValueAsString(envelope),
                schedule.first().toNanos() / 1000);
        events.publishEvent(new OutboxWritten(sessionId)); // wakes this instance's dispatcher after the commit
    }
}
