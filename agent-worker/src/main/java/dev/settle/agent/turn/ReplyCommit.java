package dev.settle.agent.turn;

import dev.settle.agent.AgentSettings;
import dev.settle.agent.lease.SessionLease;
import dev.settle.agent.webhook.Outbox;
import dev.settle.schema.DebounceTiming;
import dev.settle.schema.SessionRules;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

import java.util.LinkedHashMap;
import java.util.Map;
import java.util.UUID;

/**
 * The "one reply per burst" promise (docs/PROMISES.md): a reply is committed only by the live lease holder and only if no newer
 * message exists — or the max-wait deadline of the oldest unanswered message has passed ("bounded wait"), in
 * which case it commits for the versions it saw and the newer ones form the next turn. Under the
 * {@code enqueue} policy every burst gets its own reply: a finished reply commits for the versions it saw.
 *
 * <ol>
 *   <li>{@link #ADVANCE}: one guarded UPDATE moves replied_version from the turn's start to its end. It checks
 *       the lease token and its expiry, the expected replied_version, and the version (or the deadline) in
 *       the same statement. 0 rows = discard; nothing else is written.</li>
 *   <li>In the same transaction: the reply row (unique per covered version), the turn's COMMITTED transition,
 *       the outbox row of its webhook ({@link Outbox}), the deletion of the burst ends it covered, and the
 *       fenced {@code reply.created} event. The lease may expire between two statements of the transaction (ADVANCE
 *       locks the row, but time passes): a refused turn transition or event append rolls the whole reply back.</li>
 * </ol>
 */
@Component
public class ReplyCommit {
    static final String ADVANCE =
            """
            UPDATE chat_session s
               SET s.replied_version = ?,
                   s.oldest_unanswered_at = (SELECT MIN(m.created_at) FROM chat_message m
                                              WHERE m.session_id = ? AND m.version > ?)
             WHERE s.id = ?
               AND s.replied_version = ?
               AND (s.version = ? OR s.oldest_unanswered_at <= UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND
                    OR\s""" + SessionRules.EFFECTIVE_POLICY + " = 'enqueue')" + " AND " + SessionRules.LEASE_OURS;

    static final String INSERT_REPLY = """
            INSERT INTO chat_message (message_uid, session_id, role, text, covers_from, covers_version, turn_id, created_at)
            VALUES (?, ?, 'assistant', ?, ?, ?, ?, UTC_TIMESTAMP(6))""";

    static final String COMMIT_TURN = """
            UPDATE chat_turn t JOIN chat_session s ON s.id = t.session_id
               SET t.state = 'COMMITTED', t.ended_at = UTC_TIMESTAMP(6)
             WHERE t.id = ? AND t.state = 'RUNNING' AND t.lease_token = ?
               AND\s""" + SessionRules.LEASE_OURS;

    /** The burst ends this reply covered are spent (see {@link Conversation}); in the reply's transaction. */
    static final String SPEND_BURSTS = """
            DELETE FROM session_burst WHERE session_id = ? AND end_version <= ?""";

    static final String WHY_NOT =
            """
            SELECT\s""" + SessionRules.LEASE_OURS + " AS ours, s.version FROM chat_session s WHERE s.id = ?";

    public enum Outcome {
        COMMITTED,
        SUPERSEDED,
        LEASE_LOST
    }

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final Outbox outbox;
    private final long maxWaitMicros;
    private final String defaultPolicy;

    public ReplyCommit(
            JdbcTemplate jdbc,
            PlatformTransactionManager txManager,
            Outbox outbox,
            AgentSettings settings,
            DebounceTiming timing) {
        this.jdbc = jdbc;
        this.tx = new TransactionTemplate(txManager);
        this.tx.setIsolationLevel(TransactionDefinition.ISOLATION_READ_COMMITTED);
        this.outbox = outbox;
        this.maxWaitMicros = timing.maxwaitMicros();
        this.defaultPolicy = settings.policy().defaultPolicy();
    }

    public Outcome commit(SessionLease.Lease lease, long turnId, Conversation.Snapshot turn, String text) {
        Boolean committed = tx.execute(status -> {
            int rows = jdbc.update(
                    ADVANCE,
                    turn.toVersion(),
                    lease.sessionId(),
                    turn.toVersion(),
                    lease.sessionId(),
                    turn.fromVersion() - 1,
                    turn.toVersion(),
                    maxWaitMicros,
                    defaultPolicy,
                    lease.token());
            SessionLease.expectAtMostOne(rows, "advance replied_version");
            if (rows == 0) {
                return false;
            }
            String replyId = "msg_" + UUID.randomUUID();
            jdbc.update(INSERT_REPLY, replyId, lease.sessionId(), text, turn.fromVersion(), turn.toVersion(), turnId);
            if (jdbc.update(COMMIT_TURN, turnId, lease.token(), lease.token()) != 1) {
                if (!leaseLive(lease)) {
                    status.setRollbackOnly(); // the lease expired after ADVANCE: nothing of this reply stays
                    return false;
                }
                throw new IllegalStateException("turn " + turnId + " was not RUNNING at commit");
            }
            outbox.replyCreated(turn.outboxSpan(), replyId, text);
            jdbc.update(SPEND_BURSTS, lease.sessionId(), turn.toVersion());
            Map<String, Object> data = new LinkedHashMap<>();
            data.put("replyId", replyId);
            data.put("text", text);
            data.put("coversVersion", turn.toVersion());
            data.put("messageIds", turn.pendingIds());
            return Turns.announce(jdbc, status, lease, "reply.created", turnId, data);
        });
        if (Boolean.TRUE.equals(committed)) {
            return Outcome.COMMITTED;
        }
        return leaseLive(lease) ? Outcome.SUPERSEDED : Outcome.LEASE_LOST;
    }

    private boolean leaseLive(SessionLease.Lease lease) {
        Boolean ours =
                jdbc.query(WHY_NOT, rs -> rs.next() ? rs.getBoolean("ours") : false, lease.token(), lease.sessionId());
        return Boolean.TRUE.equals(ours);
    }
}
