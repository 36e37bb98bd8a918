package dev.settle.agent.webhook;

import dev.settle.agent.AgentSettings;
import dev.settle.schema.DbTime;
import dev.settle.schema.OkPacket;
import org.springframework.context.ApplicationEventPublisher;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import tools.jackson.databind.json.JsonMapper;

import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The webhook outbox: a delivery row written in the caller's transaction (the reply commit, or the turn's
 * failure), so a committed reply always has its delivery and a rolled-back one never does. The envelope,
 * its {@code webhook-id} and the endpoint it goes to are fixed here, once, and reused by every retry; the first
 * attempt is due after the schedule's first delay. The endpoint is the session's tenant's webhook URL, or the
 * deployment's {@code SETTLE_WEBHOOK_URL} when the tenant has none (always so for the tenant {@code default});
 * the SSRF guard checks it on every attempt like any other. A turn reads both with its snapshot and hands
 * them in as the {@link Span}'s {@link Target}, so the commit does not look them up again; {@link #SESSION}
 * serves callers without one.
 *
 * <p>The first attempt of a delivery that is first in its session's queue and due at once is claimed here, in the
 * same transaction ({@link #FIRST}): the row is inserted claimed by this instance with its attempt opened, and
 * this instance's dispatcher sends it right after the commit ({@link OutboxWritten#claim()}), without polling
 * for it or claiming it in a transaction of its own. A delivery behind an earlier pending one of its session,
 * to a disabled or unknown endpoint, or with a first delay is left to the dispatcher's queue; so is a claimed
 * one whose instance dies before its outcome: the claim expires like any other.
 */
@Component
public class Outbox {
    static final String INSERT = """
            INSERT INTO webhook_delivery (webhook_id, session_id, event_type, endpoint_url, payload, status,
                                          next_attempt_at, created_at)
            VALUES (?, ?, ?, ?, ?, 'PENDING', UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, UTC_TIMESTAMP(6))""";

    /** A claimed delivery (parameters as {@link #INSERT}, then the claim token and its microseconds). */
    static final String INSERT_CLAIMED = """
            INSERT INTO webhook_delivery (webhook_id, session_id, event_type, endpoint_url, payload, status,
                                          next_attempt_at, created_at, attempts, claim_token, claimed_until)
            VALUES (?, ?, ?, ?, ?, 'PENDING', UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, UTC_TIMESTAMP(6), 1, ?,
                    UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND)""";

    /**
     * May the first attempt be claimed now: no delivery of the session is pending before it, and what signing and
     * sending it need (the endpoint's state, the tenant's secrets, the database clock for the webhook-timestamp).
     * Parameters: session, endpoint URL, session.
     */
    static final String FIRST = """
            SELECT NOT EXISTS (SELECT 1 FROM webhook_delivery w WHERE w.session_id = ? AND w.status = 'PENDING') AS first_in_session,
                   e.disabled_at, s.tenant_id, t.webhook_url AS tenant_url, t.webhook_secrets,
                   UNIX_TIMESTAMP() AS now_epoch
              FROM chat_session s LEFT JOIN tenant t ON t.id = s.tenant_id LEFT JOIN webhook_endpoint e ON e.url = ?
             WHERE s.id = ?""";

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

    private final Duration claimFor;

    public Outbox(
            JdbcTemplate jdbc,
            DefaultEndpoint endpoint,
            RetrySchedule schedule,
            ApplicationEventPublisher events,
            AgentSettings settings) {
        this.jdbc = jdbc;
        this.endpoint = endpoint;
        this.schedule = schedule;
        this.events = events;
        this.claimFor = settings.webhook().timeout().plus(settings.webhook().claimMargin());
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
        String url = target.url() != null ? target.url() : endpoint.url();
        String webhookId = "wh_" + id;
        String payload = JSON.writeValueAsString(envelope);
        long delay = schedule.first().toNanos() / 1000;
        DeliveryQueue.Claim claim =
                delay == 0 && url != null ? claimFirst(webhookId, sessionId, type, url, payload) : null;
        if (claim == null) {
            jdbc.update(INSERT, webhookId, sessionId, type, url, payload, delay);
        }
        events.publishEvent(new OutboxWritten(sessionId, claim)); // wakes this instance's dispatcher after the commit
    }

    /** Inserts the delivery claimed with its first attempt open, if it may be sent at once; else null (nothing written). */
    private DeliveryQueue.Claim claimFirst(String webhookId, long sessionId, String type, String url, String payload) {
        record First(Instant disabledAt, String tenantId, String tenantUrl, String secrets, long now) {}
        First first = jdbc.query(
                FIRST,
                rs -> rs.next() && rs.getBoolean("first_in_session")
                        ? new First(
                                DbTime.instant(rs, "disabled_at"),
                                rs.getString("tenant_id"),
                                rs.getString("tenant_url"),
                                rs.getString("webhook_secrets"),
                                rs.getLong("now_epoch"))
                        : null,
                sessionId,
                url,
                sessionId);
        if (first == null || first.disabledAt() != null) {
            return null;
        }
        String token = UUID.randomUUID().toString();
        long deliveryId = OkPacket.insert(
                jdbc, INSERT_CLAIMED, webhookId, sessionId, type, url, payload, 0L, token, claimFor.toNanos() / 1000);
        jdbc.update(DeliveryQueue.OPEN_ATTEMPT, deliveryId, 1);
        return new DeliveryQueue.Claim(
                deliveryId,
                token,
                webhookId,
                sessionId,
                payload,
                1,
                1,
                url,
                false,
                null,
                null,
                first.now(),
                DeliveryQueue.owner(first.tenantId(), first.tenantUrl(), url, endpoint.url()),
                first.secrets(),
                false);
    }
}
