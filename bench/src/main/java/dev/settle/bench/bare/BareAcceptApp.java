package dev.settle.bench.bare;

import dev.settle.ingest.IngestApiApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.http.HttpStatus;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestBody;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.ResponseStatus;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.server.ResponseStatusException;

import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;

/**
 * The bench's "bare accept" anchor: {@code POST /v1/sessions/{id}/messages} on the same stack as ingest-api (Tomcat,
 * Jackson, HikariCP, Connector/J with ingest-api's properties, virtual threads) doing only the accept's two raw
 * statements in one transaction — the version bump of the session row and the message insert — and answering 202
 * with the message id. No security filter chain, no Kafka, no policy, no event row. The session's numeric id is
 * read once per session and kept in memory.
 */
@SpringBootApplication(
        excludeName = {
            "org.springframework.boot.security.autoconfigure.SecurityAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.UserDetailsServiceAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.web.servlet.SecurityFilterAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.web.servlet.ServletWebSecurityAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.actuate.web.servlet.ManagementWebSecurityAutoConfiguration"
        })
public class BareAcceptApp {
    /** ingest-api's properties (pool size, Connector/J settings, virtual threads) without its schema migration. */
    public static Map<String, Object> defaultProperties() {
        Map<String, Object> p = IngestApiApplication.defaultProperties();
        p.put("spring.application.name", "bare-accept");
        p.put("spring.liquibase.enabled", "false");
        p.put("management.endpoint.health.group.readiness.include", "readinessState,db"); // no Kafka here
        return p;
    }

    public record Body(String text) {}

    public record Accepted(String messageId) {}

    @RestController
    static class Accept {
        static final String UPDATE = """
                UPDATE chat_session SET version = LAST_INSERT_ID(version + 1), last_message_at = UTC_TIMESTAMP(6)
                 WHERE id = ?""";
        static final String INSERT = """
                INSERT INTO chat_message (message_uid, session_id, role, text, version, created_at)
                VALUES (?, ?, 'user', ?, LAST_INSERT_ID(), UTC_TIMESTAMP(6))""";

        private final JdbcTemplate jdbc;
        private final TransactionTemplate tx;
        private final String bearer;
        private final Map<String, Long> ids = new ConcurrentHashMap<>();

        Accept(JdbcTemplate jdbc, TransactionTemplate tx, org.springframework.core.env.Environment env) {
            this.jdbc = jdbc;
            this.tx = tx;
            this.bearer = "Bearer " + env.getRequiredProperty("settle.api-key");
        }

        @PostMapping("/v1/sessions/{sessionId}/messages")
        @ResponseStatus(HttpStatus.ACCEPTED)
        Accepted accept(
                @PathVariable String sessionId,
                @RequestHeader("Authorization") String authorization,
                @RequestBody Body body) {
            if (!bearer.equals(authorization)) {
                throw new ResponseStatusException(HttpStatus.UNAUTHORIZED);
            }
            Long id = ids.computeIfAbsent(
                    sessionId,
                    s -> jdbc.queryForObject(
                            "SELECT id FROM chat_session WHERE tenant_id = 'default' AND external_id = ?",
                            Long.class,
                            s));
            String uid = "msg_" + UUID.randomUUID();
            tx.executeWithoutResult(st -> {
                jdbc.update(UPDATE, id);
                jdbc.update(INSERT, uid, id, body.text());
            });
            return new Accepted(uid);
        }
    }
}
