package dev.settle.agent.webhook;

import dev.settle.schema.DbTime;
import dev.settle.schema.SessionEvents;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The outbox as a queue of delivery attempts, safe for any number of dispatchers.
 *
 * <ol>
 *   <li>{@link #DUE}: pending deliveries that are unclaimed (or whose claim expired) and first in their session — a
 *       later reply waits until the earlier one is delivered or dead — the due ones first, then the next to become
 *       due (so the dispatcher can sleep until then). Only a hint: step 2 re-checks every condition.</li>
 *   <li>{@link #CLAIM}: one guarded UPDATE per attempt, the per-session order included (an operator retry may
 *       have made an earlier delivery pending again since step 1); 1 row = this dispatcher sends it, 0 = another
 *       did or it is no longer first. It counts the attempt and stamps the default endpoint on a row that has
 *       none. In the same short transaction: earlier attempts left without an outcome are marked abandoned
 *       ({@link #MARK_ABANDONED}: their dispatcher died, the claim expired) and this attempt's row is opened
 *       ({@link #OPEN_ATTEMPT}), so a crash mid-attempt still leaves a visible attempt.</li>
 *   <li>{@link #finish}: the attempt's own row gets its outcome, then {@link #DELIVERED} / {@link #RETRY} /
 *       {@link #DEAD} / {@link #RELEASE}, each guarded by the claim token, so a dispatcher whose claim expired
 *       (paused, killed) cannot overwrite the outcome of the one that took over. A delivery that goes FAILED
 *       appends {@code delivery.exhausted} to the session's event stream in the same transaction.</li>
 * </ol>
 */
@Component
public class DeliveryQueue {
    private static final Logger log = LoggerFactory.getLogger(DeliveryQueue.class);
    /** The tenant of the deployment's own SETTLE_API_KEY. */
    static final String DEFAULT_TENANT = "default";

    /**
     * Sendable deliveries in the order they become due, each with the microseconds until then (≤ 0: due). First
     * parameter: 1 when a default endpoint is configured (then rows without one are sendable too); second: the
     * limit. Rows not yet due come only after every due one, so a limit reached by due rows is a full batch.
     */
    static final String DUE = """
            SELECT d.id, TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), d.next_attempt_at) AS wait_micros
              FROM webhook_delivery d
             WHERE d.status = 'PENDING'
               AND (d.claimed_until IS NULL OR d.claimed_until < UTC_TIMESTAMP(6))
               AND (d.endpoint_url IS NOT NULL OR ? = 1)
               AND NOT EXISTS (SELECT 1 FROM webhook_delivery e
                                WHERE e.session_id = d.session_id AND e.status = 'PENDING' AND e.id < d.id)
             ORDER BY d.next_attempt_at LIMIT ?""";

    /**
     * First in its session = the lowest id among the session's PENDING deliveries (in flight ones are PENDING too).
     * That lowest id is read through a derived table with an aggregate, which MySQL cannot merge into the UPDATE and
     * so materializes before it updates: MySQL refuses a plain subquery on the table being updated (error 1093).
     * Parameters: token, claim micros, default URL, id, default URL, id.
     */
    static final String CLAIM = """
            UPDATE webhook_delivery d
               SET d.claim_token = ?, d.claimed_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND,
                   d.attempts = d.attempts + 1, d.endpoint_url = COALESCE(d.endpoint_url, ?)
             WHERE d.id = ? AND d.status = 'PENDING' AND d.next_attempt_at <= UTC_TIMESTAMP(6)
               AND (d.claimed_until IS NULL OR d.claimed_until < UTC_TIMESTAMP(6))
               AND (d.endpoint_url IS NOT NULL OR ? IS NOT NULL)
               AND d.id = (SELECT f.first_id
                             FROM (SELECT MIN(e.id) AS first_id FROM webhook_delivery e
                                    WHERE e.status = 'PENDING'
                                      AND e.session_id = (SELECT x.session_id FROM webhook_delivery x
                                                           WHERE x.id = ?)) AS f)""";

    static final String READ = """
            SELECT d.webhook_id, d.session_id, d.payload, d.attempts, d.attempts_before_replay, d.endpoint_url,
                   d.replayed_at IS NOT NULL AS operator_round, e.disabled_at, e.disabled_reason,
                   s.tenant_id, t.webhook_url AS tenant_url, t.webhook_secrets, UNIX_TIMESTAMP() AS now_epoch,
                   EXISTS (SELECT 1 FROM webhook_delivery f
                            WHERE f.session_id = d.session_id AND f.status = 'PENDING' AND f.id > d.id) AS followed
              FROM webhook_delivery d LEFT JOIN webhook_endpoint e ON e.url = d.endpoint_url
                   JOIN chat_session s ON s.id = d.session_id LEFT JOIN tenant t ON t.id = s.tenant_id
             WHERE d.id = ? AND d.claim_token = ?""";

    static final String MARK_ABANDONED = """
            UPDATE webhook_attempt
               SET error = 'abandoned: its dispatcher stopped or lost the claim before recording an outcome'
             WHERE delivery_id = ? AND attempt_no < ? AND status_code IS NULL AND error IS NULL""";

    static final String OPEN_ATTEMPT = """
            INSERT INTO webhook_attempt (delivery_id, attempt_no, started_at) VALUES (?, ?, UTC_TIMESTAMP(6))""";

    /** The attempt's own row, whatever became of the claim: what happened on the wire is a fact. */
    static final String CLOSE_ATTEMPT = """
            UPDATE webhook_attempt SET status_code = ?, latency_ms = ?, error = ?
             WHERE delivery_id = ? AND attempt_no = ?""";

    static final String DELIVERED = """
            UPDATE webhook_delivery
               SET status = 'DELIVERED', delivered_at = UTC_TIMESTAMP(6), last_status = ?, last_error = NULL,
                   claim_token = NULL, claimed_until = NULL
             WHERE id = ? AND claim_token = ?""";

    /**
     * A delivered attempt of a claim still held, in one statement: the attempt's row and the delivery's together
     * (parameters: attempt, status, latency, status, id, token). Nothing matched = the claim is gone; the attempt's
     * own row is then written alone ({@link #CLOSE_ATTEMPT}).
     */
    static final String ATTEMPT_DELIVERED = """
            UPDATE webhook_delivery d JOIN webhook_attempt a ON a.delivery_id = d.id AND a.attempt_no = ?
               SET a.status_code = ?, a.latency_ms = ?, a.error = NULL,
                   d.status = 'DELIVERED', d.delivered_at = UTC_TIMESTAMP(6), d.last_status = ?, d.last_error = NULL,
                   d.claim_token = NULL, d.claimed_until = NULL
             WHERE d.id = ? AND d.claim_token = ?""";

    static final String RETRY = """
            UPDATE webhook_delivery
               SET next_attempt_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, last_status = ?, last_error = ?,
                   claim_token = NULL, claimed_until = NULL
             WHERE id = ? AND claim_token = ?""";

    static final String DEAD = """
            UPDATE webhook_delivery
               SET status = 'FAILED', last_status = ?, last_error = ?, claim_token = NULL, claimed_until = NULL
             WHERE id = ? AND claim_token = ?""";

    /** Hands an interrupted attempt back (shutdown): due at once for any dispatcher. */
    static final String RELEASE = """
            UPDATE webhook_delivery
               SET next_attempt_at = UTC_TIMESTAMP(6), last_error = ?, claim_token = NULL, claimed_until = NULL
             WHERE id = ? AND claim_token = ?""";

    /** What a delivery.exhausted event on the session's event stream tells. */
    static final String EXHAUSTED = """
            SELECT d.id, d.session_id, d.webhook_id, d.event_type, d.attempts, d.last_status, d.last_error
              FROM webhook_delivery d WHERE d.id = ?""";

    /**
     * A claimed attempt.
     *
     * @param attempt         the attempt number (over the delivery's life)
     * @param attemptInRound  the attempt number since the delivery was queued or last re-queued by an operator
     * @param operatorRound   this round was asked for by an operator retry: attempted even to a disabled endpoint
     * @param disabledReason  why the endpoint is disabled, or null when it is not
     * @param timestamp       the webhook-timestamp of this attempt: the database clock at the claim, epoch seconds
     * @param owner           the tenant whose own endpoint this is ({@link #owner}), signed with its secrets only;
     *                        null = the deployment's endpoint, signed with SETTLE_WEBHOOK_SECRET
     * @param secrets         the owner's signing secrets as stored now (a PATCH signs the next attempt)
     * @param followed        a later delivery of the session was pending at the claim: it waits for this one
     */
    public record Claim(
            long id,
            String token,
            String webhookId,
            long sessionId,
            String payload,
            int attempt,
            int attemptInRound,
            String endpointUrl,
            boolean operatorRound,
            Instant disabledAt,
            String disabledReason,
            long timestamp,
            String owner,
            String secrets,
            boolean followed) {
        public boolean endpointDisabled() {
            return disabledAt != null;
        }
    }

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final WebhookEndpoints endpoints;

    public DeliveryQueue(JdbcTemplate jdbc, PlatformTransactionManager txManager, WebhookEndpoints endpoints) {
        this.jdbc = jdbc;
        this.tx = new TransactionTemplate(txManager);
        this.tx.setIsolationLevel(TransactionDefinition.ISOLATION_READ_COMMITTED);
        this.endpoints = endpoints;
    }

    /**
     * Deliveries to start now, and when the next one becomes due.
     *
     * @param ids           due deliveries, at most the limit
     * @param nextDueMicros microseconds until the first sendable delivery that is not due yet, or null when the
     *                      listing holds none (nothing else pending, or the limit was reached first)
     */
    public record Due(List<Long> ids, Long nextDueMicros) {}

    /** @param defaultUrl the configured endpoint for rows queued without one, or null */
    public Due due(int limit, String defaultUrl) {
        List<Long> ids = new ArrayList<>();
        Long[] next = {null};
        jdbc.query(
                DUE,
                rs -> {
                    long wait = rs.getLong("wait_micros");
                    if (wait <= 0) {
                        ids.add(rs.getLong("id"));
                    } else if (next[0] == null) {
                        next[0] = wait;
                    }
                },
                defaultUrl == null ? 0 : 1,
                limit);
        return new Due(ids, next[0]);
    }

    /** @return the claim, or null if another dispatcher took this attempt (or it is no longer due or first) */
    public Claim claim(long id, Duration claimFor, String defaultUrl) {
        String token = UUID.randomUUID().toString();
        try {
            return tx.execute(status -> {
                int rows = jdbc.update(CLAIM, token, micros(claimFor), defaultUrl, id, defaultUrl, id);
                if (rows == 0) {
                    return null;
                }
                if (rows != 1) {
                    throw new IllegalStateException("claim of delivery " + id + " touched " + rows + " rows");
                }
                Claim c = jdbc.queryForObject(
                        READ,
                        (rs, i) -> new Claim(
                                id,
                                token,
                                rs.getString("webhook_id"),
                                rs.getLong("session_id"),
                                rs.getString("payload"),
                                rs.getInt("attempts"),
                                rs.getInt("attempts") - rs.getInt("attempts_before_replay"),
                                rs.getString("endpoint_url"),
                                rs.getBoolean("operator_round"),
                                DbTime.instant(rs, "disabled_at"),
                                rs.getString("disabled_reason"),
                                rs.getLong("now_epoch"),
                                owner(
                                        rs.getString("tenant_id"),
                                        rs.getString("tenant_url"),
                                        rs.getString("endpoint_url"),
                                        defaultUrl),
                                rs.getString("webhook_secrets"),
                                rs.getBoolean("followed")),
                        id,
                        token);
                if (c.attempt() > 1) {
                    jdbc.update(MARK_ABANDONED, id, c.attempt());
                }
                jdbc.update(OPEN_ATTEMPT, id, c.attempt());
                return c;
            });
        } catch (PessimisticLockingFailureException e) {
            log.debug("claim of delivery {} lost a lock race: {}", id, e.toString());
            return null;
        }
    }

    /**
     * Whose endpoint a delivery goes to, which decides whose secrets sign it: a tenant's secrets never sign for
     * another, and the deployment's never sign for a tenant.
     * <ol>
     *   <li>The tenant's current webhook URL → the tenant's.</li>
     *   <li>The deployment's {@code SETTLE_WEBHOOK_URL} → the deployment's (tenants without a URL of their own).</li>
     *   <li>Any other endpoint of the tenant {@code default} → the deployment's: that tenant is the deployment's own
     *       (e.g. an earlier SETTLE_WEBHOOK_URL stamped on its deliveries).</li>
     *   <li>Any other endpoint of another tenant → that tenant's (an earlier URL of its own).</li>
     * </ol>
     *
     * @return the tenant id, or null for the deployment's
     */
    static String owner(String tenantId, String tenantUrl, String endpointUrl, String defaultUrl) {
        if (tenantUrl != null && tenantUrl.equals(endpointUrl)) {
            return tenantId;
        }
        if (endpointUrl.equals(defaultUrl) || DEFAULT_TENANT.equals(tenantId)) {
            return null;
        }
        return tenantId;
    }

    /**
     * Records the attempt and moves the delivery as the verdict says.
     *
     * @param attemptError what went wrong on this attempt (null for a 2xx)
     * @return false when the claim had expired and another dispatcher owns the delivery now (only the attempt's
     * own row was written)
     */
    /** Appends delivery.exhausted to the session's event stream, in the transaction that made it FAILED. */
    private void announceExhausted(long deliveryId) {
        jdbc.query(
                EXHAUSTED,
                rs -> {
                    Map<String, Object> data = new LinkedHashMap<>();
                    data.put("deliveryId", rs.getLong("id"));
                    data.put("webhookId", rs.getString("webhook_id"));
                    data.put("eventType", rs.getString("event_type"));
                    data.put("attempts", rs.getInt("attempts"));
                    data.put("lastStatus", rs.getObject("last_status"));
                    data.put("reason", rs.getString("last_error"));
                    SessionEvents.append(
                            jdbc,
                            rs.getLong("session_id"),
                            null,
                            SessionEvents.Event.of("delivery.exhausted", null, data));
                },
                deliveryId);
    }

    public boolean finish(Claim c, Integer status, long latencyMicros, String attemptError, AttemptVerdict verdict) {
        if (verdict instanceof AttemptVerdict.Delivered d && !(c.operatorRound() && c.endpointDisabled())) {
            // the common case needs no transaction: one statement records both rows, or neither when the claim is gone
            if (jdbc.update(ATTEMPT_DELIVERED, c.attempt(), status, latencyMicros / 1000, d.status(), c.id(), c.token())
                    > 0) {
                return true;
            }
            jdbc.update(CLOSE_ATTEMPT, status, latencyMicros / 1000, truncate(attemptError), c.id(), c.attempt());
            return false;
        }
        return Boolean.TRUE.equals(tx.execute(s -> {
            jdbc.update(CLOSE_ATTEMPT, status, latencyMicros / 1000, truncate(attemptError), c.id(), c.attempt());
            int rows = switch (verdict) {
                case AttemptVerdict.Delivered d -> jdbc.update(DELIVERED, d.status(), c.id(), c.token());
                case AttemptVerdict.Retry r ->
                    jdbc.update(RETRY, micros(r.delay()), r.status(), truncate(r.error()), c.id(), c.token());
                case AttemptVerdict.Failed f -> jdbc.update(DEAD, f.status(), truncate(f.error()), c.id(), c.token());
                case AttemptVerdict.Released r -> jdbc.update(RELEASE, truncate(r.error()), c.id(), c.token());
            };
            if (verdict instanceof AttemptVerdict.Failed f) {
                if (rows == 1) {
                    announceExhausted(c.id());
                }
                if (f.disableEndpoint()) {
                    endpoints.disable(
                            c.endpointUrl(),
                            "HTTP 410 Gone answered to " + c.webhookId() + " (delivery " + c.id() + ", attempt "
                                    + c.attempt() + ")");
                }
            }
            if (verdict instanceof AttemptVerdict.Delivered
                    && rows == 1
                    && c.operatorRound()
                    && c.endpointDisabled()
                    && endpoints.enable(c.endpointUrl())) {
                log.info("webhook endpoint {} re-enabled: it acknowledged an operator retry", c.endpointUrl());
            }
            return rows == 1;
        }));
    }

    static long micros(Duration d) {
        return d.toNanos() / 1000;
    }

    static String truncate(String s) {
        return s == null || s.length() <= 1000 ? s : s.substring(0, 1000);
    }
}
