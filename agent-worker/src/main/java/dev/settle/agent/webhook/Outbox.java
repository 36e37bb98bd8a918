package dev.settle.agent.webhook;

import org.springframework.context.ApplicationEventPublisher;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import tools.jackson.databind.json.JsonMapper;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The webhook outbox: a delivery row written in the caller's transaction (the reply commit, or the turn's
 * failure), so a committed reply always has its delivery and a rolled-back one never does. The envelope,
 * its {@code webhook-id} and the endpoint it goes to are fixed here, once, and reused by every retry; the first
 * attempt is due after the schedule's first delay. The endpoint is the session's tenant's webhook URL, or the
 * deployment's {@code SETTLE_WEBHOOK_URL} when the tenant has none (always so for the tenant {@code default});
 * the SSRF guard checks it on every attempt like any other. A turn reads both with its snapshot and hands
 * them in as the {@link Span}'s {@link Target}, so the commit does not look them up again; {@link #SESSION}
 * serves callers without one.
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
    public record Target(String externalId, String url) {}

    /**
     * What a delivery covers: the session, the last version answered and the ids of the messages answered.
     *
     * @param target where it goes (null: looked up by {@link #SESSION})
     */
    public record Span(long sessionId, long coversVersion, List<String> messageIds, Target target) {}

    private static final JsonMapper JSON = JsonMapper.builder().build();
    private final JdbcTemplate jdbc;
    private final DefaultEndpoint endpoint;
    private final RetrySchedule schedule;
    private final ApplicationEventPublisher events;

    public Outbox(
            JdbcTemplate jdbc, DefaultEndpoint endpoint, RetrySchedule schedule, ApplicationEventPublisher events) {
        this.jdbc = jdbc;
        this.endpoint = endpoint;
        this.schedule = schedule;
        this.events = events;
    }

    public void replyCreated(Span span, String replyId, String text) {
        Map<String, Object> extra = new LinkedHashMap<>();
        extra.put("replyId", replyId);
        extra.put("text", text);
        insert("reply.created", replyId, span, extra);
    }

    public void replyFailed(Span span, long turnId, String error) {
        Map<String, Object> extra = new LinkedHashMap<>();
        extra.put("turnId", turnId);
        extra.put("error", error);
        insert("reply.failed", "turn_" + turnId, span, extra);
    }

    private Target target(long sessionId) {
        return jdbc.queryForObject(
                SESSION, (rs, i) -> new Target(rs.getString("external_id"), rs.getString("webhook_url")), sessionId);
    }

    private void insert(String type, String id, Span span, Map<String, Object> extra) {
        long sessionId = span.sessionId();
        Target target = span.target() != null ? span.target() : target(sessionId);
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("sessionId", target.externalId());
        data.put("coversVersion", span.coversVersion());
        data.put("messageIds", span.messageIds());
        data.putAll(extra);
        Map<String, Object> envelope = new LinkedHashMap<>();
        envelope.put("type", type);
        envelope.put("timestamp", Instant.now().toString());
        envelope.put("data", data);
        jdbc.update(
                INSERT,
                "wh_" + id,
                sessionId,
                type,
                target.url() != null ? target.url() : endpoint.url(),
                JSON.writeValueAsString(envelope),
                schedule.first().toNanos() / 1000);
        events.publishEvent(new OutboxWritten(sessionId)); // wakes this instance's dispatcher after the commit
    }
}
