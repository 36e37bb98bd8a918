package dev.settle.ingest.accept;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/** A session's double-texting policy; setting it on an unknown session creates the session (version 0). */
@Component
class SessionPolicies {
    static final String UPSERT = """
            INSERT INTO chat_session (tenant_id, external_id, version, policy, created_at)
            VALUES (?, ?, 0, ?, UTC_TIMESTAMP(6))
            ON DUPLICATE KEY UPDATE policy = ?""";

    private final JdbcTemplate jdbc;

    public SessionPolicies(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    public void set(String tenant, String sessionId, String policy) {
        jdbc.update(UPSERT, tenant, sessionId, policy, policy);
    }
}
