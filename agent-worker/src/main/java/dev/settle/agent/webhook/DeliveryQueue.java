package dev.settle.agent.webhook;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.util.List;
import java.util.UUID;

/**
 * The outbox as a queue of delivery attempts, safe for any number of dispatchers.
 *
 * <ol>
 *   <li>{@link #DUE}: pending deliveries that are due, unclaimed (or whose claim expired), and first in their
 *       session — a later reply waits until the earlier one is delivered or dead.</li>
 *   <li>{@link #CLAIM}: one guarded UPDATE per attempt; 1 row = this dispatcher sends it, 0 = another did.</li>
 *   <li>{@link #DELIVERED} / {@link #RETRY} / {@link #DEAD}: guarded by the claim token, so a dispatcher whose
 *       claim expired (paused, killed) cannot overwrite the outcome of the one that took over.</li>
 * </ol>
 */
@Component
public class DeliveryQueue {
    static final String DUE = """
            SELECT d.id FROM webhook_delivery d
             WHERE d.status = 'PENDING' AND d.next_attempt_at <= UTC_TIMESTAMP(6)
               AND (d.claimed_until IS NULL OR d.claimed_until < UTC_TIMESTAMP(6))
               AND NOT EXISTS (SELECT 1 FROM webhook_delivery e
                                WHERE e.session_id = d.session_id AND e.status = 'PENDING' AND e.id < d.id)
             ORDER BY d.next_attempt_at LIMIT ?""";

    static final String CLAIM = """
            UPDATE webhook_delivery
               SET claim_token = ?, claimed_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, attempts = attempts + 1
             WHERE id = ? AND status = 'PENDING' AND next_attempt_at <= UTC_TIMESTAMP(6)
               AND (claimed_until IS NULL OR claimed_until < UTC_TIMESTAMP(6))""";

    static final String READ = "SELECT webhook_id, payload, attempts FROM webhook_delivery WHERE id = ? AND claim_token = ?";

    static final String DELIVERED = """
            UPDATE webhook_delivery
               SET status = 'DELIVERED', delivered_at = UTC_TIMESTAMP(6), last_status = ?, last_error = NULL,
                   claim_token = NULL, claimed_until = NULL
             WHERE id = ? AND claim_token = ?""";

    static final String RETRY = """
            UPDATE webhook_delivery
               SET next_attempt_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, last_status = ?, last_error = ?,
                   claim_token = NULL, claimed_until = NULL
             WHERE id = ? AND claim_token = ?""";

    static final String DEAD = """
            UPDATE webhook_delivery
               SET status = 'FAILED', last_status = ?, last_error = ?, claim_token = NULL, claimed_until = NULL
             WHERE id = ? AND claim_token = ?""";

    static final String ATTEMPT = """
            INSERT INTO webhook_attempt (delivery_id, attempt_no, started_at, status_code, latency_ms, error)
            VALUES (?, ?, UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND, ?, ?, ?)""";

    /** A claimed attempt. */
    public record Claim(long id, String token, String webhookId, String payload, int attempt) {
    }

    private final JdbcTemplate jdbc;

    public DeliveryQueue(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    public List<Long> due(int limit) {
        return jdbc.queryForList(DUE, Long.class, limit);
    }

    /** @return the claim, or null if another dispatcher took this attempt */
    public Claim claim(long id, long claimMicros) {
        String token = UUID.randomUUID().toString();
        if (jdbc.update(CLAIM, token, claimMicros, id) != 1) {
            return null;
        }
        return jdbc.queryForObject(READ, (rs, i) -> new Claim(id, token, rs.getString("webhook_id"),
                rs.getString("payload"), rs.getInt("attempts")), id, token);
    }

    public boolean delivered(Claim c, int status) {
        return jdbc.update(DELIVERED, status, c.id(), c.token()) == 1;
    }

    public boolean retry(Claim c, long delayMicros, Integer status, String error) {
        return jdbc.update(RETRY, delayMicros, status, truncate(error), c.id(), c.token()) == 1;
    }

    public boolean dead(Claim c, Integer status, String error) {
        return jdbc.update(DEAD, status, truncate(error), c.id(), c.token()) == 1;
    }

    public void recordAttempt(Claim c, long latencyMicros, Integer status, String error) {
        jdbc.update(ATTEMPT, c.id(), c.attempt(), latencyMicros, status, latencyMicros / 1000, truncate(error));
    }

    static String truncate(String s) {
        return s == null || s.length() <= 1000 ? s : s.substring(0, 1000);
    }
}
