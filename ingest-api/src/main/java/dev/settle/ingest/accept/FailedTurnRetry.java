package dev.settle.ingest.accept;

import dev.settle.ingest.http.ApiProblem;
import dev.settle.schema.DbTime;
import dev.settle.schema.SessionRules;
import org.springframework.http.HttpStatus;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Instant;
import java.util.List;

/**
 * The explicit retry of a session whose last turn failed (model down): clears the failure mark so the
 * debounce worker and the agent take the session up again. Without it (or a new message) a failed session
 * is left alone, so a broken model never causes a retry loop.
 */
@Component
class FailedTurnRetry {
    static final String CLEAR = """
            UPDATE chat_session s SET s.failed_version = s.replied_version
             WHERE s.tenant_id = ? AND s.external_id = ? AND\s""" + SessionRules.FAILED_AT_VERSION;

    static final String READ = """
            SELECT id, version, oldest_unanswered_at, UTC_TIMESTAMP(6) AS now
              FROM chat_session WHERE tenant_id = ? AND external_id = ?""";

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;

    public FailedTurnRetry(JdbcTemplate jdbc, TransactionTemplate tx) {
        this.jdbc = jdbc;
        this.tx = tx;
    }

    /** @return the session, to be announced like an accepted message */
    public MessageAcceptance.Accepted retry(String tenant, String sessionId) {
        return tx.execute(status -> {
            if (jdbc.update(CLEAR, tenant, sessionId) == 0) {
                throw new ApiProblem(
                        HttpStatus.CONFLICT, "nothing-to-retry", "the session has no failed turn waiting for a retry");
            }
            List<MessageAcceptance.Accepted> rows = jdbc.query(
                    READ,
                    (rs, i) -> {
                        Instant now = DbTime.instant(rs, "now");
                        return new MessageAcceptance.Accepted(
                                rs.getLong("id"),
                                sessionId,
                                null,
                                rs.getLong("version"),
                                now,
                                DbTime.instant(rs, "oldest_unanswered_at"),
                                false,
                                null);
                    },
                    tenant,
                    sessionId);
            return rows.getFirst();
        });
    }
}
