package dev.settle.agent.webhook;

import dev.settle.agent.AgentWorkerApplication;
import dev.settle.embedded.AppLauncher;
import dev.settle.testsupport.SharedInfra;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * An agent worker started for real (its webhook dispatcher running) on a database of the shared MariaDB; tests
 * queue deliveries with SQL shaped exactly like {@code Outbox}'s and watch a real receiver. Two nodes on one
 * database are two dispatcher instances.
 */
final class WebhookNode implements AutoCloseable {
    static final String SECRET = "whsec_cInLi1ITi1drPLvrjsLAyhW8oE7SQ4DJrHYkDnmZdiI=";
    static final String SECRET_2 = "whsec_C2FVsBQIhrscChlQIMV+b5sSYspob7oD";

    final String database;
    final ConfigurableApplicationContext context;
    final JdbcTemplate jdbc;

    /** A node on a new database. */
    static WebhookNode start(String hint, Map<String, Object> extra) {
        return new WebhookNode(SharedInfra.newDatabase(hint), extra);
    }

    WebhookNode(String database, Map<String, Object> extra) {
        this.database = database;
        Map<String, Object> props = new HashMap<>();
        props.put("spring.datasource.url", database);
        props.put("spring.kafka.bootstrap-servers", SharedInfra.kafkaBootstrap());
        props.put("server.port", "0"); // the actuator; several workers share this JVM
        props.put("spring.kafka.consumer.group-id", "webhook-test-" + UUID.randomUUID());
        props.put("spring.kafka.listener.auto-startup", "false");
        props.put("spring.datasource.hikari.maximum-pool-size", "30");
        props.put("settle.agent.orphan-scan", "false");
        props.put("settle.webhook.secret", SECRET);
        props.put("settle.webhook.schedule", "0s,200ms,400ms");
        props.put("settle.webhook.poll-interval", "20ms");
        props.put("settle.webhook.allowprivate", "true");
        props.put("settle.webhook.jitter-seed", "42");
        props.putAll(extra);
        context = AppLauncher.run(AgentWorkerApplication.class, AgentWorkerApplication.defaultProperties(), props);
        jdbc = context.getBean(JdbcTemplate.class);
    }

    <T> T bean(Class<T> type) {
        return context.getBean(type);
    }

    /** A session row, as the ingest API would create it; returns its primary key. */
    long session(String externalId) {
        jdbc.update("""
                INSERT INTO chat_session (external_id, version, replied_version, created_at)
                VALUES (?, 1, 1, UTC_TIMESTAMP(6))""", externalId);
        return jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, externalId);
    }

    /** Queues a reply.created delivery to {@code endpoint}, due now, as the reply commit does; returns its id. */
    long enqueue(long sessionPk, String externalId, String endpoint, String text) {
        String webhookId = "wh_msg_" + UUID.randomUUID();
        String payload = """
                {"type":"reply.created","timestamp":"2026-01-01T00:00:00Z","data":{"sessionId":"%s","coversVersion":1,\
                "messageIds":["msg_1"],"replyId":"%s","text":"%s"}}""".formatted(externalId, webhookId.substring(3), text);
        jdbc.update("""
                INSERT INTO webhook_delivery (webhook_id, session_id, event_type, endpoint_url, payload, status,
                                              next_attempt_at, created_at)
                VALUES (?, ?, 'reply.created', ?, ?, 'PENDING', UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))""", webhookId, sessionPk, endpoint, payload);
        return jdbc.queryForObject("SELECT id FROM webhook_delivery WHERE webhook_id = ?", Long.class, webhookId);
    }

    String webhookId(long deliveryId) {
        return jdbc.queryForObject("SELECT webhook_id FROM webhook_delivery WHERE id = ?", String.class, deliveryId);
    }

    String status(long deliveryId) {
        return jdbc.queryForObject("SELECT status FROM webhook_delivery WHERE id = ?", String.class, deliveryId);
    }

    Map<String, Object> row(long deliveryId) {
        return jdbc.queryForMap("SELECT * FROM webhook_delivery WHERE id = ?", deliveryId);
    }

    /** The delivery's attempt rows, in order: attempt_no, status_code, latency_ms, error. */
    List<Map<String, Object>> attempts(long deliveryId) {
        return jdbc.queryForList("""
                SELECT attempt_no, status_code, latency_ms, error FROM webhook_attempt
                 WHERE delivery_id = ? ORDER BY attempt_no""", deliveryId);
    }

    int count(String sql, Object... args) {
        return jdbc.queryForObject(sql, Integer.class, args);
    }

    static void sleep(Duration d) {
        try {
            Thread.sleep(d);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        context.close();
    }
}
