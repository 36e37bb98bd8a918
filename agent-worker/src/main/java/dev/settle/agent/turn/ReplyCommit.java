package dev.settle.agent.turn;

import dev.settle.agent.AgentSettings;
import dev.settle.agent.lease.SessionLease;
import dev.settle.agent.stream.TurnStream;
import dev.settle.agent.webhook.Outbox;
import dev.settle.schema.DebounceTiming;
import dev.settle.schema.GuardedInsert;
import dev.settle.schema.OkPacket;
import dev.settle.schema.SessionEvents;
import dev.settle.schema.SessionRules;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
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
 *       the same statement; it also reserves the seqs of the events still to write, releases the lease, moves
 *       the turn (still RUNNING under this lease) to COMMITTED with its model calls, and reports whether newer
 *       messages are waiting (in its OK packet). 0 rows = discard; the transaction rolls back, so nothing is written.</li>
 *   <li>ADVANCE holds the session row's lock until commit, so nobody can claim the lease, append an event or
 *       answer the session before this transaction ends: the statements after it need no fence of their own. In
 *       the same transaction: the stream's last events and {@code reply.created} (seqs reserved by ADVANCE), the
 *       reply row (unique per covered version) — inserted only if the turn's persisted deltas are all there
 *       ({@link #INSERT_REPLY}; otherwise the whole reply rolls back and the turn fails) — and the deletion of the
 *       burst ends it covered.</li>
 *   <li>The outbox row of its webhook ({@link Outbox}) is written first, before ADVANCE: it needs nothing ADVANCE
 *       reserves, locks only its own new rows, and only a lease holder writes a session's deliveries, so it needs
 *       no session lock either; a reply that is then not committed rolls it back with everything else. So the
 *       session row — which every {@code POST} of the session waits for — is held over the fewest round trips:
 *       ADVANCE, the events, the reply row, COMMIT ({@code ReplyCostTest}).</li>
 * </ol>
 */
@Component
public class ReplyCommit {
    /**
     * Moves the session and ends the turn in one statement: the session's replied_version advances, its lease is
     * released, its event seqs are reserved, and the turn's row becomes COMMITTED with its model calls — or nothing
     * changes. Parameters: turn, the turn's lease token, replied_version, session, replied_version (for the oldest
     * unanswered), events to reserve, the turn's last version (newer messages waiting?), the turn's calls
     * ({@link Turns.Calls#bind}, 4), session, expected replied_version, version, max-wait, default policy, lease token.
     * Its LAST_INSERT_ID is {@code top seq * 2 + (newer messages waiting)}; it matches 2 rows (the session's and the
     * turn's) or none. {@code STRAIGHT_JOIN} fixes the order in which the rows are read, so locked: the session's
     * first, as in every transaction under a lease (with a plain JOIN the optimizer chooses, and MariaDB follows the
     * text); held up on the turn's row, the reply then already holds the session, and a successor's claim waits
     * for it instead of taking the session over (FencedWritesTest). Every assignment reads only its own column's
     * old value or a parameter, so the order in which the server applies them (not fixed for a multi-table UPDATE)
     * does not matter.
     */
    static final String ADVANCE = """
            UPDATE chat_session s STRAIGHT_JOIN chat_turn t
                ON t.id = ? AND t.session_id = s.id AND t.state = 'RUNNING' AND t.lease_token = ?
               SET s.replied_version = ?,
                   s.oldest_unanswered_at = (SELECT MIN(m.created_at) FROM chat_message m
                                              WHERE m.session_id = ? AND m.version > ?),
                   s.event_seq = LAST_INSERT_ID((s.event_seq + ?) * 2 + (s.version > ?)) DIV 2,
                   s.lease_token = NULL,
                   s.lease_expires_at = NULL,
                   t.state = 'COMMITTED', t.ended_at = UTC_TIMESTAMP(6),\s""" + Turns.Calls.ADD + """

             WHERE s.id = ?
               AND s.replied_version = ?
               AND (s.version = ? OR s.oldest_unanswered_at <= UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND
                    OR\s""" + SessionRules.EFFECTIVE_POLICY + " = 'enqueue')"
            + " AND " + SessionRules.LEASE_OURS;

    /**
     * The reply, if the turn's persisted deltas number what it streamed ({@link GuardedInsert}: refused otherwise).
     * The session row it reads is already ours, locked by {@link #ADVANCE}.
     */
    static final String INSERT_REPLY = """
            INSERT INTO chat_message (message_uid, session_id, role, text, covers_from, covers_version, turn_id, created_at)
            VALUES (?, (SELECT s.id FROM chat_session s
                         WHERE s.id = ?
                           AND (SELECT COUNT(*) FROM session_event e WHERE e.turn_id = ? AND e.chunk_seq > 0) = ?),
                    'assistant', ?, ?, ?, ?, UTC_TIMESTAMP(6))""";

    /** @return false when the turn's persisted deltas do not number {@code deltas}: nothing inserted */
    static boolean insertReply(
            JdbcTemplate jdbc,
            String replyId,
            long sessionId,
            String text,
            long from,
            long to,
            long turnId,
            int deltas) {
        return GuardedInsert.insert(jdbc, INSERT_REPLY, replyId, sessionId, turnId, deltas, text, from, to, turnId)
                != null;
    }

    /** The burst ends this reply covered are spent (see {@link Conversation}); in the reply's transaction. */
    static final String SPEND_BURSTS = """
            DELETE FROM session_burst WHERE session_id = ? AND end_version <= ?""";

    static final String WHY_NOT =
            """
            SELECT\s""" + SessionRules.LEASE_OURS + " AS ours, s.version FROM chat_session s WHERE s.id = ?";

    public enum Outcome {
        /** Committed, the lease released. */
        COMMITTED,
        SUPERSEDED,
        LEASE_LOST,
        /** The persisted stream misses deltas the turn streamed: nothing was committed. */
        STREAM_LOST
    }

    /**
     * @param waiting committed, and newer messages were already waiting (their timer may have fired while the
     *                lease was held)
     */
    public record Result(Outcome outcome, boolean waiting) {}

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

    /**
     * @param rest  what the turn's stream left to write ({@link TurnStream#handOver()})
     * @param calls the turn's model calls
     */
    public Result commit(
            SessionLease.Lease lease,
            long turnId,
            Conversation.Snapshot turn,
            TurnStream.Rest rest,
            Turns.Calls calls) {
        String replyId = "msg_" + UUID.randomUUID();
        String text = rest.text();
        Map<String, Object> created = new LinkedHashMap<>();
        created.put("turnId", turnId);
        created.put("replyId", replyId);
        created.put("text", text);
        created.put("coversVersion", turn.toVersion());
        created.put("messageIds", turn.pendingIds());
        List<SessionEvents.Event> events = new ArrayList<>(rest.events());
        events.add(SessionEvents.Event.of("reply.created", turnId, created));
        Outcome[] failed = {null};
        Long reserved = tx.execute(status -> {
            outbox.replyCreated(turn.outboxSpan(), replyId, text); // before the session row is locked
            Object[] c = calls.bind();
            OkPacket.Reserved advanced = OkPacket.update(
                    jdbc,
                    ADVANCE,
                    turnId,
                    lease.token(),
                    turn.toVersion(),
                    lease.sessionId(),
                    turn.toVersion(),
                    events.size(),
                    turn.toVersion(),
                    c[0],
                    c[1],
                    c[2],
                    c[3],
                    lease.sessionId(),
                    turn.fromVersion() - 1,
                    turn.toVersion(),
                    maxWaitMicros,
                    defaultPolicy,
                    lease.token());
            if (advanced.rows() == 0) {
                status.setRollbackOnly(); // the outbox rows written before it go too
                return null;
            }
            if (advanced.rows() != 2) {
                throw new IllegalStateException("advance of session " + lease.sessionId() + " and turn " + turnId
                        + " matched " + advanced.rows() + " rows, expected 2");
            }
            long last = advanced.lastInsertId() > 0
                    ? advanced.lastInsertId()
                    : jdbc.queryForObject("SELECT LAST_INSERT_ID()", Long.class);
            SessionEvents.insertReserved(jdbc, lease.sessionId(), (last >> 1) - events.size() + 1, events);
            if (!insertReply(
                    jdbc,
                    replyId,
                    lease.sessionId(),
                    text,
                    turn.fromVersion(),
                    turn.toVersion(),
                    turnId,
                    rest.deltas())) {
                failed[0] = Outcome.STREAM_LOST;
                status.setRollbackOnly();
                return null;
            }
            if (turn.bursts()) {
                jdbc.update(SPEND_BURSTS, lease.sessionId(), turn.toVersion());
            }
            return last;
        });
        if (reserved != null) {
            return new Result(Outcome.COMMITTED, (reserved & 1) == 1);
        }
        if (failed[0] != null) {
            return new Result(failed[0], false);
        }
        return new Result(leaseLive(lease) ? Outcome.SUPERSEDED : Outcome.LEASE_LOST, false);
    }

    private boolean leaseLive(SessionLease.Lease lease) {
        Boolean ours =
                jdbc.query(WHY_NOT, rs -> rs.next() ? rs.getBoolean("ours") : false, lease.token(), lease.sessionId());
        return Boolean.TRUE.equals(ours);
    }
}
