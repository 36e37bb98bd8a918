package dev.settle.agent.turn;

import dev.settle.agent.lease.SessionLease;
import dev.settle.agent.stream.TurnStream;
import dev.settle.schema.Causes;
import dev.settle.schema.GuardedInsert;
import dev.settle.schema.SessionEvents;
import dev.settle.schema.SessionRules;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The turn state machine, one row per attempt to answer a span of versions:
 * {@code RUNNING → COMMITTED | DISCARDED | FAILED}. Every write is one statement guarded by the session's live lease
 * ({@link dev.settle.schema.SessionRules#LEASE_OURS}: its token, not expired on the database clock), so only
 * the live holder opens, moves or counts a turn; COMMITTED is written by {@link ReplyCommit} inside the commit
 * transaction, whose first statement is that guard. A turn's model calls and tokens are counted in memory
 * ({@link Calls}) and added by the statement that ends it. Transactions that also append events lock the session
 * row first: with {@link SessionLease#lockHeld} when they must read under the lock what to write, else with the
 * events' guarded seq reservation as their first statement (a discard).
 */
@Component
public class Turns {
    /** Opens a RUNNING turn, guarded by the live lease ({@link GuardedInsert}: refused when the lease is gone). */
    static final String BEGIN =
            """
            INSERT INTO chat_turn (session_id, lease_token, lease_epoch, from_version, to_version, state, started_at)
            VALUES (""" + GuardedInsert.SESSION_IF_LEASE_OURS + ", ?, ?, ?, ?, 'RUNNING', UTC_TIMESTAMP(6))";

    /**
     * Closes a RUNNING turn, adding the model calls it made ({@link Calls}), marking its tokens estimated when some
     * are, and setting, when given (not NULL), the characters it streamed; the join on chat_session is the live-lease
     * guard.
     */
    static final String END = """
            UPDATE chat_turn t JOIN chat_session s ON s.id = t.session_id
               SET t.state = ?, t.reason = ?, t.ended_at = UTC_TIMESTAMP(6),
                   t.streamed_chars = COALESCE(?, t.streamed_chars), t.tokens_estimated = (t.tokens_estimated OR ?),
                   \s""" + Calls.ADD + """

             WHERE t.id = ? AND t.state = 'RUNNING'
               AND\s""" + SessionRules.LEASE_OURS;

    /**
     * The model calls of a turn that finished, with the tokens their servers reported: counted in memory while
     * the turn runs and added to its row by the statement that ends it ({@link #ADD}). A worker that dies
     * mid-turn leaves its turn's count at what earlier holders wrote.
     */
    public record Calls(int calls, long prompt, long cached, long completion) {
        public static final Calls NONE = new Calls(0, 0, 0, 0);

        /** The SET clause that adds a {@code Calls} to a turn row {@code t} (4 parameters, {@link #bind}). */
        static final String ADD = """
                t.model_calls = t.model_calls + ?, t.prompt_tokens = t.prompt_tokens + ?,
                   t.cached_tokens = t.cached_tokens + ?, t.completion_tokens = t.completion_tokens + ?""";

        public Calls plus(long prompt, long cached, long completion) {
            return new Calls(calls + 1, this.prompt + prompt, this.cached + cached, this.completion + completion);
        }

        /** The parameters of {@link #ADD}. */
        Object[] bind() {
            return new Object[] {calls, prompt, cached, completion};
        }
    }

    /** The reason of a turn whose holder lost its lease, closed by the next holder. */
    static final String ABANDONED = "abandoned: its holder lost the lease";

    /** Turns left RUNNING by a holder that lost its lease (crashed or paused): closed by the next holder. */
    static final String CLOSE_ABANDONED = """
            UPDATE chat_turn t JOIN chat_session s ON s.id = t.session_id
               SET t.state = 'FAILED', t.reason = ?, t.ended_at = UTC_TIMESTAMP(6)
             WHERE t.session_id = ? AND t.state = 'RUNNING' AND t.lease_token <> ?
               AND\s""" + SessionRules.LEASE_OURS;

    /**
     * The turns earlier holders left RUNNING, each with whether its stream opened (its {@code turn.started} was
     * written; the event's row carries the turn's id, {@code uk_event_chunk}).
     */
    static final String LEFT_RUNNING = "SELECT t.id, " + Stopped.OPENED
            + " FROM chat_turn t WHERE t.session_id = ? AND t.state = 'RUNNING' AND t.lease_token <> ?";

    /**
     * A turn broken by an unexpected error (a database connection lost mid-statement, a rollback that failed) is
     * closed by its own holder with the error as its reason, so that its record says what happened; left RUNNING,
     * the next holder would close it as abandoned. A lease opens at most one turn, so the lease's token names it (no
     * row matches when the turn had not begun; a successor that closed it first keeps its reason). Parameters:
     * reason, session, the turn's lease token.
     */
    static final String CLOSE_BROKEN = """
            UPDATE chat_turn SET state = 'FAILED', reason = ?, ended_at = UTC_TIMESTAMP(6)
             WHERE session_id = ? AND lease_token = ? AND state = 'RUNNING'""";

    /** The turn a lease opened, while it is RUNNING, with whether its stream opened. */
    static final String RUNNING_UNDER = "SELECT t.id, " + Stopped.OPENED
            + " FROM chat_turn t WHERE t.session_id = ? AND t.lease_token = ? AND t.state = 'RUNNING'";

    /** A turn that ends without a reply of its own: its id, and whether its stream opened. */
    record Stopped(long turnId, boolean opened) {
        static final String OPENED = "EXISTS (SELECT 1 FROM session_event e WHERE e.turn_id = t.id) AS opened";

        static final org.springframework.jdbc.core.RowMapper<Stopped> ROW =
                (rs, i) -> new Stopped(rs.getLong("id"), rs.getBoolean("opened"));
    }

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
     * Opens a RUNNING turn in one guarded statement; null when the lease is gone. Turns an earlier holder left
     * RUNNING are closed first, when the snapshot saw one ({@code abandoned}, {@link #closeAbandoned}); null too when
     * they could not be closed. Its
     * {@code turn.started} event is written by the turn's stream ({@link #started}), before anything else of the turn.
     */
    public Long begin(SessionLease.Lease lease, long fromVersion, long toVersion, boolean abandoned) {
        if (abandoned && !closeAbandoned(lease)) {
            return null;
        }
        return GuardedInsert.insert(
                jdbc, BEGIN, lease.sessionId(), lease.token(), lease.token(), lease.epoch(), fromVersion, toVersion);
    }

    /**
     * Closes the turns earlier holders left RUNNING as FAILED ({@link #ABANDONED}) and ends the stream of each that
     * opened one with {@code turn.abandoned}, in one transaction that locks the session row first: the earlier
     * holders' writes are fenced by that row, so none of them is in flight and what their streams hold is final.
     * Nothing is closed when the lease is gone, and then no turn may begin: a guarded write refused for an expired
     * lease does not mean the next one is refused too (a renewal that began before the expiry and waited for this
     * transaction's lock on the session row renews it afterwards), and a turn begun beside an unclosed one would leave
     * that one's stream without an end.
     *
     * @return false when the lease was found gone (nothing closed)
     */
    boolean closeAbandoned(SessionLease.Lease lease) {
        return Boolean.TRUE.equals(tx.execute(status -> {
            if (!leases.lockHeld(lease)) {
                return false;
            }
            List<Stopped> stopped = jdbc.query(LEFT_RUNNING, Stopped.ROW, lease.sessionId(), lease.token());
            if (stopped.isEmpty()) {
                return true; // closed by an earlier holder meanwhile
            }
            jdbc.update(CLOSE_ABANDONED, ABANDONED, lease.sessionId(), lease.token(), lease.token());
            return announceEnds(status, lease, stopped, ABANDONED);
        }));
    }

    /**
     * {@link #CLOSE_BROKEN}, the reason being {@code error: } and the innermost cause of {@code error}, and the turn's
     * stream, if it opened one, ended with {@code turn.abandoned}: in one transaction under the session row's lock,
     * while the lease is live. Called once the turn's stream writer stopped ({@link TurnStream#close()}), so nothing
     * of the turn is written after its end.
     *
     * @return false when no turn was RUNNING under this lease (none had begun, or it was closed already) or the lease
     *     is gone (the next holder closes it)
     */
    public boolean closeBroken(SessionLease.Lease lease, Throwable error) {
        Throwable root = Causes.root(error);
        String reason = "error: " + root.getClass().getSimpleName()
                + (root.getMessage() == null ? "" : ": " + root.getMessage());
        String truncated = truncate(reason);
        return Boolean.TRUE.equals(tx.execute(status -> {
            if (!leases.lockHeld(lease)) {
                return false;
            }
            List<Stopped> turn = jdbc.query(RUNNING_UNDER, Stopped.ROW, lease.sessionId(), lease.token());
            if (turn.isEmpty()) {
                return false;
            }
            jdbc.update(CLOSE_BROKEN, truncated, lease.sessionId(), lease.token());
            return announceEnds(status, lease, turn, truncated);
        }));
    }

    /**
     * The {@code turn.abandoned} event ({@code turnId}, {@code reason}) of each turn in {@code ended} whose stream
     * opened: a client that saw it start sees it end without a reply, and a later turn answers its messages.
     */
    private boolean announceEnds(
            TransactionStatus status, SessionLease.Lease lease, List<Stopped> ended, String reason) {
        List<SessionEvents.Event> events = new ArrayList<>();
        for (Stopped turn : ended) {
            if (turn.opened()) {
                Map<String, Object> data = new LinkedHashMap<>();
                data.put("turnId", turn.turnId());
                data.put("reason", reason);
                events.add(SessionEvents.Event.of("turn.abandoned", turn.turnId(), data));
            }
        }
        if (!SessionEvents.append(jdbc, lease.sessionId(), lease.token(), events)) {
            status.setRollbackOnly();
            return false;
        }
        return true;
    }

    /** The turn's opening event, {@code turn.started}: the span it answers. */
    public static SessionEvents.Event started(long turnId, long fromVersion, long toVersion) {
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("turnId", turnId);
        data.put("fromVersion", fromVersion);
        data.put("toVersion", toVersion);
        return SessionEvents.Event.of("turn.started", turnId, data);
    }

    /** How a turn ends without a reply; COMMITTED is written by {@link ReplyCommit}. */
    public enum Ending {
        DISCARDED,
        FAILED
    }

    /** @return false when the lease is gone (the next holder closes the turn) */
    public boolean end(SessionLease.Lease lease, long turnId, Ending ending, String reason, Calls calls) {
        return end(lease, turnId, ending, reason, calls, null, false);
    }

    /**
     * {@link #END}; {@code streamedChars} null leaves the turn's count as it is; {@code estimated}: some of
     * {@code calls}' tokens are estimates.
     */
    private boolean end(
            SessionLease.Lease lease,
            long turnId,
            Ending ending,
            String reason,
            Calls calls,
            Integer streamedChars,
            boolean estimated) {
        Object[] c = calls.bind();
        int rows = jdbc.update(
                END,
                ending.name(),
                truncate(reason),
                streamedChars,
                estimated,
                c[0],
                c[1],
                c[2],
                c[3],
                turnId,
                lease.token());
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

        /**
         * {@code calls} with the cut-off call added when there was one, its usage estimated from characters (4 per
         * token): the prompt from the request, the completion from what the call streamed; what the provider's cache
         * served is unknown, so nothing is counted as cached. The cut call counts as a model call: it was made, and
         * its tokens were spent.
         */
        Calls withCutCall(Calls calls) {
            return callCutOff ? calls.plus(promptChars / 4, 0, cutCallChars / 4) : calls;
        }
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
    public boolean discard(SessionLease.Lease lease, long turnId, String reason, Spent spent, Calls calls) {
        return discard(lease, turnId, reason, spent, calls, List.of());
    }

    /**
     * DISCARDED, as {@link #discard(SessionLease.Lease, long, String, Spent, Calls)}, after the events its stream
     * handed over unwritten ({@code unwritten}: its partial text stays on record).
     */
    public boolean discard(
            SessionLease.Lease lease,
            long turnId,
            String reason,
            Spent spent,
            Calls calls,
            List<SessionEvents.Event> unwritten) {
        Map<String, Object> data = new LinkedHashMap<>();
        data.put("reason", reason);
        return Boolean.TRUE.equals(tx.execute(status -> {
            // the events' guarded seq reservation locks the session row first (SessionLease#LOCK_HELD's lock order)
            // and holds it over the turn's end and the commit only
            if (!announce(jdbc, status, lease, unwritten, "turn.discarded", turnId, data)) {
                return false;
            }
            if (!end(
                    lease,
                    turnId,
                    Ending.DISCARDED,
                    reason,
                    spent.withCutCall(calls),
                    spent.streamedChars(),
                    spent.callCutOff())) {
                status.setRollbackOnly();
                return false;
            }
            return true;
        }));
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
        return announce(jdbc, status, lease, List.of(), type, turnId, data);
    }

    /** {@link #announce(JdbcTemplate, TransactionStatus, SessionLease.Lease, String, long, Map)} after {@code before}. */
    static boolean announce(
            JdbcTemplate jdbc,
            TransactionStatus status,
            SessionLease.Lease lease,
            List<SessionEvents.Event> before,
            String type,
            long turnId,
            Map<String, Object> data) {
        Map<String, Object> event = new LinkedHashMap<>();
        event.put("turnId", turnId);
        event.putAll(data);
        List<SessionEvents.Event> events = new ArrayList<>(before);
        events.add(SessionEvents.Event.of(type, turnId, event));
        if (!SessionEvents.append(jdbc, lease.sessionId(), lease.token(), events)) {
            status.setRollbackOnly();
            return false;
        }
        return true;
    }

    static String truncate(String s) {
        return s == null || s.length() <= 500 ? s : s.substring(0, 500);
    }
}
