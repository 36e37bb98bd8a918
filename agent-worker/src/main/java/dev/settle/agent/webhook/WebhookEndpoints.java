package dev.settle.agent.webhook;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/**
 * Endpoints that said they are gone. A 410 disables the endpoint (keyed by its URL): deliveries to it are no
 * longer attempted and become FAILED with the reason, visible in the dead-letter list. An operator retry of one
 * of them is attempted anyway, and its 2xx re-enables the endpoint. (Enabling by hand is a later admin feature.)
 */
@Component
public class WebhookEndpoints {
    /**
     * The last 410 wins: disabled_at is the latest time the endpoint said it is gone. Parameters: url, reason, reason
     * (bound again for the update: VALUES() there is deprecated in MySQL, its row alias unknown to MariaDB).
     */
    static final String DISABLE = """
            INSERT INTO webhook_endpoint (url, disabled_at, disabled_reason, created_at, updated_at)
            VALUES (?, UTC_TIMESTAMP(6), ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
            ON DUPLICATE KEY UPDATE disabled_at = UTC_TIMESTAMP(6), disabled_reason = ?,
                                    updated_at = UTC_TIMESTAMP(6)""";

    static final String ENABLE = """
            UPDATE webhook_endpoint SET disabled_at = NULL, disabled_reason = NULL, updated_at = UTC_TIMESTAMP(6)
             WHERE url = ? AND disabled_at IS NOT NULL""";

    private final JdbcTemplate jdbc;

    public WebhookEndpoints(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    public void disable(String url, String reason) {
        String truncated = DeliveryQueue.truncate(reason);
        jdbc.update(DISABLE, url, truncated, truncated);
    }

    /** @return whether it was disabled */
    public boolean enable(String url) {
        return jdbc.update(ENABLE, url) == 1;
    }
}
