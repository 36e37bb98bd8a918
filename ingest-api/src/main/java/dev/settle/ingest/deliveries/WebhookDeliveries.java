package dev.settle.ingest.deliveries;

import dev.settle.ingest.http.ApiProblem;
import dev.settle.schema.DbTime;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.namedparam.NamedParameterJdbcTemplate;
import org.springframework.stereotype.Component;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Read-only view of the webhook outbox for operators: deliveries newest first, each with its attempts in order.
 * A delivery is shown only through its session's tenant.
 */
@Component
class WebhookDeliveries {
    /** Parameters: tenant, status (or null) twice, session external id (or null) twice, before id (or null) twice, limit. */
    static final String LIST = """
            SELECT d.id, d.webhook_id, s.external_id, d.event_type, d.endpoint_url, d.status, d.attempts,
                   d.next_attempt_at, d.last_status, d.last_error, d.created_at, d.delivered_at, d.replayed_at
              FROM webhook_delivery d JOIN chat_session s ON s.id = d.session_id
             WHERE s.tenant_id = ?
               AND (? IS NULL OR d.status = ?)
               AND (? IS NULL OR s.external_id = ?)
               AND (? IS NULL OR d.id < ?)
             ORDER BY d.id DESC
             LIMIT ?""";

    static final String ONE = """
            SELECT d.id, d.webhook_id, s.external_id, d.event_type, d.endpoint_url, d.status, d.attempts,
                   d.next_attempt_at, d.last_status, d.last_error, d.created_at, d.delivered_at, d.replayed_at
              FROM webhook_delivery d JOIN chat_session s ON s.id = d.session_id
             WHERE s.tenant_id = ? AND d.id = ?""";

    static final String ATTEMPTS = """
            SELECT delivery_id, attempt_no, started_at, status_code, latency_ms, error
              FROM webhook_attempt
             WHERE delivery_id IN (:ids)
             ORDER BY delivery_id, attempt_no""";

    /** The statuses a delivery can have, as the API spells them. */
    public enum Status {
        PENDING,
        DELIVERED,
        FAILED;

        public static Status parse(String value) {
            for (Status s : values()) {
                if (s.name().equalsIgnoreCase(value)) {
                    return s;
                }
            }
            throw ApiProblem.badRequest("invalid-status", "status must be one of failed, pending, delivered");
        }

        String api() {
            return name().toLowerCase(Locale.ROOT);
        }
    }

    private final JdbcTemplate jdbc;
    private final NamedParameterJdbcTemplate named;

    public WebhookDeliveries(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
        this.named = new NamedParameterJdbcTemplate(jdbc);
    }

    /** @param status, sessionId, before: null for no filter */
    public List<Map<String, Object>> list(String tenant, Status status, String sessionId, Long before, int limit) {
        String s = status == null ? null : status.name();
        List<Map<String, Object>> deliveries = jdbc.query(
                LIST, WebhookDeliveries::delivery, tenant, s, s, sessionId, sessionId, before, before, limit);
        return withAttempts(deliveries);
    }

    /** @return the delivery, or null when this tenant has none with that id */
    public Map<String, Object> one(String tenant, long id) {
        List<Map<String, Object>> rows = jdbc.query(ONE, WebhookDeliveries::delivery, tenant, id);
        return rows.isEmpty() ? null : withAttempts(rows).getFirst();
    }

    private List<Map<String, Object>> withAttempts(List<Map<String, Object>> deliveries) {
        if (deliveries.isEmpty()) {
            return deliveries;
        }
        Map<Long, List<Map<String, Object>>> byDelivery = new LinkedHashMap<>();
        for (Map<String, Object> d : deliveries) {
            List<Map<String, Object>> history = new ArrayList<>();
            d.put("history", history);
            byDelivery.put((Long) d.get("id"), history);
        }
        named.query(ATTEMPTS, Map.of("ids", byDelivery.keySet()), rs -> {
            Map<String, Object> a = new LinkedHashMap<>();
            a.put("attempt", rs.getInt("attempt_no"));
            a.put("time", iso(DbTime.instant(rs, "started_at")));
            a.put("statusCode", (Integer) rs.getObject("status_code", Integer.class));
            a.put("latencyMs", (Long) rs.getObject("latency_ms", Long.class));
            a.put("error", rs.getString("error"));
            byDelivery.get(rs.getLong("delivery_id")).add(a);
        });
        return deliveries;
    }

    private static Map<String, Object> delivery(ResultSet rs, int row) throws SQLException {
        Map<String, Object> d = new LinkedHashMap<>();
        Status status = Status.valueOf(rs.getString("status"));
        d.put("id", rs.getLong("id"));
        d.put("webhookId", rs.getString("webhook_id"));
        d.put("sessionId", rs.getString("external_id"));
        d.put("type", rs.getString("event_type"));
        d.put("endpoint", rs.getString("endpoint_url"));
        d.put("status", status.api());
        d.put("attempts", rs.getInt("attempts"));
        d.put("nextAttemptAt", status == Status.PENDING ? iso(DbTime.instant(rs, "next_attempt_at")) : null);
        d.put("lastStatus", rs.getObject("last_status", Integer.class));
        d.put("lastError", rs.getString("last_error"));
        d.put("createdAt", iso(DbTime.instant(rs, "created_at")));
        d.put("deliveredAt", iso(DbTime.instant(rs, "delivered_at")));
        d.put("replayedAt", iso(DbTime.instant(rs, "replayed_at")));
        return d;
    }

    private static String iso(Instant instant) {
        return instant == null ? null : instant.toString();
    }
}
