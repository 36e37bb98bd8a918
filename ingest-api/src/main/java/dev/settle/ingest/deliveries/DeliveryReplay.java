package dev.settle.ingest.deliveries;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.util.List;

/**
 * An operator's retry of a dead letter: one guarded UPDATE moves a FAILED delivery back to PENDING, due now,
 * with the same webhook-id and payload. The retry schedule restarts (attempt numbers keep counting), and the
 * round is marked as an operator's (replayed_at), which the dispatcher attempts even when the endpoint is
 * disabled. Affected rows 0 = not FAILED (or not this tenant's): the caller tells which.
 */
@Component
class DeliveryReplay {
    static final String REPLAY = """
            UPDATE webhook_delivery d JOIN chat_session s ON s.id = d.session_id
               SET d.status = 'PENDING', d.next_attempt_at = UTC_TIMESTAMP(6), d.attempts_before_replay = d.attempts,
                   d.replayed_at = UTC_TIMESTAMP(6), d.claim_token = NULL, d.claimed_until = NULL
             WHERE d.id = ? AND d.status = 'FAILED' AND s.tenant_id = ?""";

    static final String STATUS = """
            SELECT d.status FROM webhook_delivery d JOIN chat_session s ON s.id = d.session_id
             WHERE d.id = ? AND s.tenant_id = ?""";

    public enum Outcome {
        REQUEUED,
        NOT_FOUND,
        PENDING,
        DELIVERED
    }

    private final JdbcTemplate jdbc;

    public DeliveryReplay(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    public Outcome retry(String tenant, long deliveryId) {
        int rows = jdbc.update(REPLAY, deliveryId, tenant);
        if (rows > 1) {
            throw new IllegalStateException("replay of delivery " + deliveryId + " touched " + rows + " rows");
        }
        if (rows == 1) {
            return Outcome.REQUEUED;
        }
        List<String> status = jdbc.queryForList(STATUS, String.class, deliveryId, tenant);
        if (status.isEmpty()) {
            return Outcome.NOT_FOUND;
        }
        return "DELIVERED".equals(status.getFirst()) ? Outcome.DELIVERED : Outcome.PENDING;
    }
}
