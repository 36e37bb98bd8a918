package dev.settle.agent.tools;

import dev.settle.schema.GuardedInsert;
import dev.settle.schema.SessionRules;
import dev.settle.schema.SqlErrors;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowMapper;
import org.springframework.stereotype.Component;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

import java.util.List;
import java.util.function.Supplier;

/**
 * The tool_execution rows and their guarded transitions: {@code PENDING → EXECUTING → COMPLETED | FAILED}.
 * Every transition of a holder joins chat_session and requires the caller's lease token to be the live lease,
 * so a holder that lost its lease cannot move an execution; the reaper moves only what no live lease owns.
 */
@Component
public class ToolExecutions {
    /** A PENDING row, guarded by the live lease ({@link GuardedInsert}: refused when the lease is gone). */
    static final String INSERT = """
            INSERT INTO tool_execution (session_id, turn_id, span_from, idem_key, call_id, tool_name, arguments_json,
                                        ordinal, side_effect, status, lease_token, model_call, answers_version,
                                        created_at)
            VALUES (""" + GuardedInsert.SESSION_IF_LEASE_OURS
            + ", ?, ?, ?, ?, ?, ?, ?, ?, 'PENDING', ?, ?, ?, UTC_TIMESTAMP(6))";

    static final String BY_KEY = "SELECT * FROM tool_execution WHERE idem_key = ?";
    static final String BY_ID = "SELECT * FROM tool_execution WHERE id = ?";

    /**
     * The execution row if no other transaction holds it. A side-effecting call's row is held by its tool
     * transaction from before the tool runs until its commit or rollback; a row held now is an attempt in flight.
     */
    static final String LOCK_IF_FREE = "SELECT id FROM tool_execution WHERE id = ? FOR UPDATE SKIP LOCKED";

    /**
     * First statement of a tool transaction: our own EXECUTING row, held until the commit. Two attempts at one key
     * are serialised by this row; nothing a renewal or a POST needs is locked while the tool runs (the session row
     * is locked only at the end, by the fence before the commit).
     */
    static final String LOCK_OWN = """
            SELECT id FROM tool_execution WHERE id = ? AND status = 'EXECUTING' AND lease_token = ? FOR UPDATE""";

    /**
     * Take a call over: ours now (a dead holder's EXECUTING, a reaped retryable FAILED, a PENDING). The call sits
     * where the taking turn's model made it (its call id and position, when given).
     */
    static final String START = """
            UPDATE tool_execution t JOIN chat_session s ON s.id = t.session_id
               SET t.status = 'EXECUTING', t.lease_token = ?, t.turn_id = ?, t.started_at = UTC_TIMESTAMP(6),
                   t.call_id = COALESCE(?, t.call_id), t.model_call = COALESCE(?, t.model_call),
                   t.answers_version = COALESCE(?, t.answers_version),
                   t.retryable = FALSE, t.result = NULL, t.ended_at = NULL
             WHERE t.id = ? AND (t.status IN ('PENDING', 'EXECUTING') OR (t.status = 'FAILED' AND t.retryable))
               AND\s""" + SessionRules.LEASE_OURS;

    /**
     * The call is ours ({@code t.lease_token}) <em>and</em> our lease is still live: a holder paused past its TTL
     * is dead even if nobody took over yet, so it can neither commit a side effect nor put a result into the
     * successor's context. Inside the fenced transaction the session row is already locked by us.
     */
    static final String COMPLETE = """
            UPDATE tool_execution t JOIN chat_session s ON s.id = t.session_id
               SET t.status = 'COMPLETED', t.result = ?, t.ended_at = UTC_TIMESTAMP(6)
             WHERE t.id = ? AND t.status = 'EXECUTING' AND t.lease_token = ?
               AND\s""" + SessionRules.LEASE_OURS;

    static final String FAIL = """
            UPDATE tool_execution t JOIN chat_session s ON s.id = t.session_id
               SET t.status = 'FAILED', t.retryable = ?, t.result = ?, t.ended_at = UTC_TIMESTAMP(6)
             WHERE t.id = ? AND t.status IN ('PENDING', 'EXECUTING') AND t.lease_token = ?
               AND\s""" + SessionRules.LEASE_OURS;

    /**
     * Executions stuck past the timeout that no live lease owns (plain read, no locks): their holder is gone, or
     * lost its lease and can commit nothing. A slow call under its live holder is not stuck. A token that is not
     * live never becomes live again, so what this finds stays unowned.
     */
    static final String STUCK = """
            SELECT t.id, t.lease_token FROM tool_execution t JOIN chat_session s ON s.id = t.session_id
             WHERE t.status IN ('PENDING', 'EXECUTING')
               AND COALESCE(t.started_at, t.created_at) < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND
               AND (s.lease_token IS NULL OR s.lease_token <> t.lease_token OR NOT\s""" + SessionRules.LEASE_UNEXPIRED + """
            )
             ORDER BY t.id
             LIMIT 500""";

    /** The stuck row, unless a transaction still holds it (a fenced-out attempt in flight: it will roll back). */
    static final String LOCK_STUCK = """
            SELECT id FROM tool_execution
             WHERE id = ? AND lease_token = ? AND status IN ('PENDING', 'EXECUTING') FOR UPDATE SKIP LOCKED""";

    /** A stuck execution never ran to its commit (effect and COMPLETED commit together): safe to retry later. */
    static final String REAP = """
            UPDATE tool_execution
               SET status = 'FAILED', retryable = TRUE, ended_at = UTC_TIMESTAMP(6),
                   result = '{"error":"the tool call did not finish in time and was not applied; it may be retried"}'
             WHERE id = ? AND lease_token = ? AND status IN ('PENDING', 'EXECUTING')""";

    static final String PAIRS = """
            SELECT * FROM tool_execution
             WHERE session_id = ? AND span_from >= ? AND status IN ('COMPLETED', 'FAILED')
             ORDER BY id""";

    /**
     * One row. {@code modelCall} (which model call of turn {@code turnId} made it) and {@code answersVersion} (the last
     * version that turn answered) place it in later prompts; null for a row made without them.
     */
    public record Execution(
            long id,
            long sessionId,
            long spanFrom,
            String idemKey,
            String callId,
            String toolName,
            String argumentsJson,
            String status,
            boolean retryable,
            String result,
            String leaseToken,
            Integer modelCall,
            Long answersVersion,
            long turnId) {
        public boolean done() {
            return "COMPLETED".equals(status) || ("FAILED".equals(status) && !retryable);
        }
    }

    static final RowMapper<Execution> ROW = (rs, i) -> new Execution(
            rs.getLong("id"),
            rs.getLong("session_id"),
            rs.getLong("span_from"),
            rs.getString("idem_key"),
            rs.getString("call_id"),
            rs.getString("tool_name"),
            rs.getString("arguments_json"),
            rs.getString("status"),
            rs.getBoolean("retryable"),
            rs.getString("result"),
            rs.getString("lease_token"),
            rs.getObject("model_call", Integer.class),
            rs.getObject("answers_version", Long.class),
            rs.getLong("turn_id"));

    private static final Logger log = LoggerFactory.getLogger(ToolExecutions.class);
    /** ER_LOCK_DEADLOCK: InnoDB rolled the statement's transaction back to break a cycle. */
    static final int DEADLOCK = 1213;

    static final int ATTEMPTS = 3;

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;

    public ToolExecutions(JdbcTemplate jdbc, PlatformTransactionManager txManager) {
        this.jdbc = jdbc;
        this.tx = new TransactionTemplate(txManager);
        this.tx.setIsolationLevel(TransactionDefinition.ISOLATION_READ_COMMITTED);
    }

    /** What {@link #tryStart} found. */
    public enum Start {
        /** The call is ours now, EXECUTING under our token. */
        STARTED,
        /** Lease lost, or the call is done (re-read it). */
        REFUSED,
        /** Another attempt's tool transaction holds the row: its outcome is not known yet. */
        IN_FLIGHT
    }

    /**
     * Runs a guarded single-statement write; when it ran on its own (autocommit) and InnoDB chose it as a deadlock
     * victim, nothing of it applied, so it runs again (up to {@link #ATTEMPTS} times) instead of failing the turn.
     * Inside a caller's transaction the whole transaction is gone: the error propagates.
     */
    private <T> T statement(String what, Supplier<T> write) {
        for (int attempt = 1; ; attempt++) {
            try {
                return write.get();
            } catch (PessimisticLockingFailureException e) {
                if (attempt >= ATTEMPTS
                        || !deadlock(e)
                        || TransactionSynchronizationManager.isActualTransactionActive()) {
                    throw e;
                }
                log.info("tool execution {}: deadlock victim, attempt {} of {}", what, attempt + 1, ATTEMPTS);
            }
        }
    }

    static boolean deadlock(Throwable e) {
        return SqlErrors.has(e, DEADLOCK);
    }

    /** A new PENDING row, or the existing row with the same key (re-read after the unique index refused ours). */
    public Execution insertOrGet(Call call) {
        if (call.idemKey() != null) {
            List<Execution> existing = jdbc.query(BY_KEY, ROW, call.idemKey());
            if (!existing.isEmpty()) {
                return existing.getFirst();
            }
        }
        Long id;
        try {
            id = statement(
                    "insert",
                    () -> GuardedInsert.insert(
                            jdbc,
                            INSERT,
                            call.sessionId(),
                            call.leaseToken(),
                            call.turnId(),
                            call.spanFrom(),
                            call.idemKey(),
                            call.callId(),
                            call.toolName(),
                            call.argumentsJson(),
                            call.ordinal(),
                            call.sideEffect(),
                            call.leaseToken(),
                            call.modelCall(),
                            call.answersVersion()));
        } catch (DuplicateKeyException raced) {
            return jdbc.query(BY_KEY, ROW, call.idemKey()).getFirst();
        }
        return id == null ? null : byId(id); // null: lease lost
    }

    public Execution byId(long id) {
        return jdbc.queryForObject(BY_ID, ROW, id);
    }

    /** @return true when the call is ours now ({@link Start#STARTED}) */
    public boolean start(long id, long turnId, String leaseToken) {
        return tryStart(id, turnId, leaseToken) == Start.STARTED;
    }

    /**
     * Takes the call to EXECUTING in a short transaction of its own that never waits for an attempt in flight:
     * the row is locked with {@code SKIP LOCKED} first, then moved ({@link #START}).
     */
    public Start tryStart(long id, long turnId, String leaseToken) {
        return tryStart(id, turnId, leaseToken, null, null, null);
    }

    /** {@link #tryStart(long, long, String)}, placing the call where the taking turn's model made it. */
    public Start tryStart(
            long id, long turnId, String leaseToken, String callId, Integer modelCall, Long answersVersion) {
        return statement(
                "start",
                () -> tx.execute(status -> {
                    if (jdbc.queryForList(LOCK_IF_FREE, Long.class, id).isEmpty()) {
                        return Start.IN_FLIGHT;
                    }
                    return jdbc.update(START, leaseToken, turnId, callId, modelCall, answersVersion, id, leaseToken)
                                    == 1
                            ? Start.STARTED
                            : Start.REFUSED;
                }));
    }

    /** Inside the tool transaction: @return false when the call is no longer ours ({@link #LOCK_OWN}) */
    public boolean lockOwn(long id, String leaseToken) {
        return !jdbc.queryForList(LOCK_OWN, Long.class, id, leaseToken).isEmpty();
    }

    public boolean complete(long id, String result, String leaseToken) {
        return statement("complete", () -> jdbc.update(COMPLETE, result, id, leaseToken, leaseToken)) == 1;
    }

    public boolean fail(long id, boolean retryable, String result, String leaseToken) {
        return statement("fail", () -> jdbc.update(FAIL, retryable, result, id, leaseToken, leaseToken)) == 1;
    }

    /** @return how many stuck executions no live lease owns were marked FAILED (retryable) */
    public int reap(long olderThanMicros) {
        int reaped = 0;
        for (var stuck : jdbc.queryForList(STUCK, olderThanMicros)) {
            long id = ((Number) stuck.get("id")).longValue();
            String token = (String) stuck.get("lease_token");
            Integer rows = statement(
                    "reap",
                    () -> tx.execute(status ->
                            jdbc.queryForList(LOCK_STUCK, Long.class, id, token).isEmpty()
                                    ? 0
                                    : jdbc.update(REAP, id, token)));
            reaped += rows == null ? 0 : rows;
        }
        return reaped;
    }

    public List<Execution> completedPairs(long sessionId, long fromSpan) {
        return jdbc.query(PAIRS, ROW, sessionId, fromSpan);
    }

    /** What a turn intends to call. */
    public record Call(
            long sessionId,
            long turnId,
            long spanFrom,
            String idemKey,
            String callId,
            String toolName,
            String argumentsJson,
            int ordinal,
            boolean sideEffect,
            String leaseToken,
            Integer modelCall,
            Long answersVersion) {
        /** A call whose place in the conversation is not recorded (it goes at the end of its span). */
        public Call(
                long sessionId,
                long turnId,
                long spanFrom,
                String idemKey,
                String callId,
                String toolName,
                String argumentsJson,
                int ordinal,
                boolean sideEffect,
                String leaseToken) {
            this(
                    sessionId,
                    turnId,
                    spanFrom,
                    idemKey,
                    callId,
                    toolName,
                    argumentsJson,
                    ordinal,
                    sideEffect,
                    leaseToken,
                    null,
                    null);
        }
    }
}
