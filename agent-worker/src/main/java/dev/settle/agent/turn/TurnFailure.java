package dev.settle.agent.turn;

import dev.settle.agent.lease.SessionLease;
import dev.settle.agent.webhook.Outbox;
import dev.settle.schema.SessionRules;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * A turn whose model calls all failed: the turn becomes FAILED, the session remembers the version it failed
 * at (so neither the sweeper nor a redelivered event retries it in a loop), and a {@code reply.failed}
 * webhook is queued — all in one transaction, guarded by the lease (the webhook's outbox row first, before the
 * session row is locked, as in {@link ReplyCommit}). The messages stay unanswered until a new
 * message moves the version past {@code failed_version}.
 */
@Component
public class TurnFailure {
    static final String MARK_SESSION = """
            UPDATE chat_session s SET failed_version = ?
             WHERE id = ? AND\s""" + SessionRules.LEASE_OURS;

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final Turns turns;
    private final Outbox outbox;

    public TurnFailure(JdbcTemplate jdbc, PlatformTransactionManager txManager, Turns turns, Outbox outbox) {
        this.jdbc = jdbc;
        this.tx = new TransactionTemplate(txManager);
        this.turns = turns;
        this.outbox = outbox;
    }

    public boolean record(
            SessionLease.Lease lease, long turnId, Conversation.Snapshot turn, String error, Turns.Calls calls) {
        return Boolean.TRUE.equals(tx.execute(status -> {
            outbox.replyFailed(turn.outboxSpan(), turnId, error); // before the session row is locked (see ReplyCommit)
            if (jdbc.update(MARK_SESSION, turn.toVersion(), lease.sessionId(), lease.token()) != 1
                    || !turns.end(lease, turnId, Turns.Ending.FAILED, error, calls)) {
                status.setRollbackOnly();
                return false;
            }
            Map<String, Object> data = new LinkedHashMap<>();
            data.put("error", error);
            return Turns.announce(jdbc, status, lease, "turn.failed", turnId, data);
        }));
    }
}
