package dev.settle.agent.turn;

import dev.settle.agent.lease.SessionLease;
import dev.settle.schema.SessionEvents;
import dev.settle.schema.SessionRules;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.support.GeneratedKeyHolder;
import org.springframework.stereotype.Component;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;

import java.sql.PreparedStatement;
import java.sql.Statement;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The turn state machine, one row per attempt to answer a span of versions:
 * {@code RUNNING → COMMITTED | DISCARDED | FAILED}. Every write is one UPDATE guarded by the session's live lease
 * ({@link dev.settle.schema.SessionRules#LEASE_OURS}: its token, not expired on the database clock), so only
 * the live holder moves or counts a turn; COMMITTED is written by {@link ReplyCommit}
 * inside the commit transaction. Transactions that also append events lock the session row first
 * ({@link SessionLease#lockHeld}).
 */
@Component
public class Turns {
    static final String BEGIN = """
            INSERT INTO chat_turn (session_id, lease_token, lease_epoch, from_version, to_version, state, started_at)
            VALUES (?, ?, ?, ?, ?, 'RUNNING', UTC_TIMESTAMP(6))""";

    /** Closes a RUNNING turn; the join on chat_session is the live-lease guard. */
    static final String END = """
            UPDATE chat_turn t JOIN chat_session s ON s.id = t.session_id
               SET t.state = ?, t.reason = ?, t.ended_at = UTC_TIMESTAMP(6)
             WHERE t.id = ? AND t.state = 'RUNNING'
               AND\s""" + SessionRules.LEASE_OURS;

    /** Turns left RUNNING by a holder that lost its lease (crashed or paused): closed by the next holder. */
    static final String CLOSE_ABANDONED = """
            UPDATE chat_turn t JOIN chat_session s ON s.id = t.session_id
               SET t.state = 'FAILED', t.reason = 'abandoned: its holder lost the lease', t.ended_at = UTC_TIMESTAMP(6)
             WHERE t.session_id = ? AND t.state = 'RUNNING' AND t.lease_token <> ?
               AND\s""" + SessionRules.LEASE_OURS;

    /**
     * The usage of a discarded turn whose last call was cut off before the server reported usage: estimated from
     * characters (4 per token): the prompt from the request, the completion from what the call streamed; what the
     * provider's cache served is unknown, so nothing is counted as cached. The cut call counts as a model call: it
     * was made, and its tokens were spent.
     */
    static final String ESTIMATE_USAGE = """
            UPDATE chat_turn t JOIN chat_session s ON s.id = t.session_id
               SET t.prompt_tokens = t.prompt_tokens + ?, t.completion_tokens = t.completion_tokens + ?,
                   t.model_calls = t.model_calls + 1, t.tokens_estimated = TRUE
             WHERE t.id = ? AND t.lease_token = ?
               AND\s""" + SessionRules.LEASE_OURS;

    static final String STREAMED = """
            UPDATE chat_turn t JOIN chat_session s ON s.id = t.session_id
               SET t.streamed_chars = ?
             WHERE t.id = ? AND t.lease_token = ?
               AND\s""" + SessionRules.LEASE_OURS;

    /**
     * A finished model call and its tokens. Like every write of a holder it checks the live lease, not only the
     * turn's own token: a fenced-out holder's late call leaves its abandoned turn's counters as they were.
     */
    static final String COUNT_CALLS = """
            UPDATE chat_turn t JOIN chat_session s ON s.id = t.session_id
               SET t.model_calls = t.model_calls + 1, t.prompt_tokens = t.prompt_tokens + ?,
                   t.cached_tokens = t.cached_tokens + ?, t.completion_tokens = t.completion_tokens + ?
             WHERE t.id = ? AND t.lease_token = ?
               AND\s""" + SessionRules.LEASE_OURS;

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final SessionLease leases;

    public Turns(JdbcTemplate jdbc, PlatformTransactionManager txManager, SessionLease leases) {
        this.jdbc = jdbc;
        this.leases = leases;
        this.tx = new TransactionTemplate(txManager);
        this.tx.setIsolationLevel(TransactionDefinition.ISOLATION_READ_COMMITTED);
    }

    /** {@link #begin(SessionLease.Lease, long, long, boolean)} closing any abandoned turn first. */
    public Long begin(SessionLease.Lease lease, long fromVersion, long toVersion) {
        return begin(lease, fromVersion, toVersion, true);
    }

    /**
     * Opens a RUNNING turn and announces it (turn.started); null when the lease is gone. Turns an earlier holder
     * left RUNNING are closed first, when the snapshot saw one ({@code abandoned}).
     */
    public Long begin(SessionLease.Lease lease, long fromVersion, long toVersion, boolean abandoned) {
        return tx.execute(status -> {
            if (!leases.lockHeld(lease)) {
                return null;
            }
            if (abandoned) {
                jdbc.update(CLOSE_ABANDONED, lease.sessionId(), lease.token(), lease.token());
            }
            long turnId = insert(lease, fromVersion, toVersion);
            Map<String, Object> data = new LinkedHashMap<>();
            data.put("fromVersion", fromVersion);
            data.put("toVersion", toVersion);
            return announce(jdbc, status, lease, "turn.started", turnId, data) ? turnId : null;
        });
    }

    private long insert(SessionLease.Lease lease, long fromVersion, long toVersion) {
        GeneratedKeyHolder keys = new GeneratedKeyHolder();
        jdbc.update(
                c -> {
                    PreparedStatement ps = c.prepareStatement(BEGIN, Statement.RETURN_GENERATED_KEYS);
                    ps.setLong(1, lease.sessionId());
                    ps.setString(2, lease.token());
                    ps.setLong(3, lease.epoch());
                    ps.setLong(4, fromVersion);
                    ps.setLong(5, toVersion);
                    return ps;
                },
                keys);
        return keys.getKey().longValue();
    }

    /** How a turn ends without a reply; COMMITTED is written by {@link ReplyCommit}. */
    public enum Ending {
        DISCARDED,
        FAILED
    }

    /** @return false when the lease is gone (the next holder closes the turn) */
    public boolean end(SessionLease.Lease lease, long turnId, Ending ending, String reason) {
        int rows = jdbc.update(END, ending.name(), truncate(reason), turnId, lease.token());
        SessionLease.expectAtMostOne(rows, "end turn");
        return rows == 1;
    }

    /**
     * What a discarded turn spent beyond the model calls already counted.
     *
     * @param streamedChars characters the model streamed in the whole turn
     * @param callCutOff    the last model call was cut off before the server reported its usage
     * @param promptChars   the prompt of that last call, in characters
     * @param cutCallChars  characters that last call streamed before the cut
     */
    public record Spent(int streamedChars, boolean callCutOff, int promptChars, int cutCallChars) {
        /** Nothing streamed, no call cut off. */
        public static final Spent NONE = new Spent(0, false, 0, 0);
    }

    /** A turn's token figures, summed over its model calls. */
    public record Tokens(long prompt, long cached, long completion, boolean estimated) {}

    static final String TOKENS = """
            SELECT prompt_tokens, cached_tokens, completion_tokens, tokens_estimated FROM chat_turn WHERE id = ?""";

    public Tokens tokensOf(long turnId) {
        return jdbc.queryForObject(
                TOKENS,
                (rs, i) -> new Tokens(
                        rs.getLong("prompt_tokens"),
                        rs.getLong("cached_tokens"),
                        rs.getLong("completion_tokens"),
                        rs.getBoolean("tokens_estimated")),
                turnId);
    }

    /** DISCARDED, with its reason and the tokens it spent, announced as turn.discarded. */
    public boolean discard(SessionLease.Lease lease, long turnId, String reason, Spent spent) {
        return Boolean.TRUE.equals(tx.execute(status -> {
            if (!leases.lockHeld(lease)) {
                return false;
            }
            if (spent.callCutOff()) {
                jdbc.update(
                        ESTIMATE_USAGE,
                        spent.promptChars() / 4,
                        spent.cutCallChars() / 4,
                        turnId,
                        lease.token(),
                        lease.token());
            }
            jdbc.update(STREAMED, spent.streamedChars(), turnId, lease.token(), lease.token());
            if (!end(lease, turnId, Ending.DISCARDED, reason)) {
                status.setRollbackOnly();
                return false;
            }
            Map<String, Object> data = new LinkedHashMap<>();
            data.put("reason", reason);
            return announce(jdbc, status, lease, "turn.discarded", turnId, data);
        }));
    }

    /** @return false when the lease is no longer live (nothing counted) */
    public boolean countCall(
            SessionLease.Lease lease, long turnId, int promptTokens, int cachedTokens, int completionTokens) {
        int rows = jdbc.update(
                COUNT_CALLS, promptTokens, cachedTokens, completionTokens, turnId, lease.token(), lease.token());
        SessionLease.expectAtMostOne(rows, "count model call");
        return rows == 1;
    }

    /**
     * Appends a turn's event ({@code turnId} first, then {@code data}) in the caller's transaction. When the lease
     * expired during the transaction the event is refused and the transaction marked rollback-only: no change of
     * a turn without its event.
     *
     * @return false when the event was refused
     */
    static boolean announce(
            JdbcTemplate jdbc,
            TransactionStatus status,
            SessionLease.Lease lease,
            String type,
            long turnId,
            Map<String, Object> data) {
        Map<String, Object> event = new LinkedHashMap<>();
        event.put("turnId", turnId);
        event.putAll(data);
        if (!SessionEvents.append(
                jdbc, lease.sessionId(), lease.token(), SessionEvents.Event.of(type, turnId, event))) {
            status.setRollbackOnly();
            return false;
        }
        return true;
    }

    static String truncate(String s) {
        return s == null || s.length() <= 500 ? s : s.substring(0, 500);
    }
}
