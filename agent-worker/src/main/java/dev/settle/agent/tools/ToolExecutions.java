package dev.settle.agent.tools;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.dao.PessimisticLockingFailureException;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.core.RowMapper;
import org.springframework.jdbc.support.GeneratedKeyHolder;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionSynchronizationManager;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.List;
import java.util.function.Supplier;

/**
 * The tool_execution rows and their guarded transitions: {@code PENDING → EXECUTING → COMPLETED | FAILED}.
 * Every transition joins chat_session and requires the caller's lease token to be the live lease, so a
 * holder that lost its lease cannot move an execution.
 */
@Component
public class ToolExecutions {
    static final String INSERT = """
            INSERT INTO tool_execution (session_id, turn_id, span_from, idem_key, call_id, tool_name, arguments_json,
                                        ordinal, side_effect, status, lease_token, created_at)
            SELECT id, ?, ?, ?, ?, ?, ?, ?, ?, 'PENDING', ?, UTC_TIMESTAMP(6)
              FROM chat_session WHERE id = ? AND lease_token = ? AND lease_expires_at >= UTC_TIMESTAMP(6)""";

    static final String BY_KEY = "SELECT * FROM tool_execution WHERE idem_key = ?";
    static final String BY_ID = "SELECT * FROM tool_execution WHERE id = ?";

    /** Take a call over: ours now (a dead holder's EXECUTING, a reaped retryable FAILED, a PENDING). */
    static final String START = """
            UPDATE tool_execution t JOIN chat_session s ON s.id = t.session_id
               SET t.status = 'EXECUTING', t.lease_token = ?, t.turn_id = ?, t.started_at = UTC_TIMESTAMP(6),
                   t.retryable = FALSE, t.result = NULL, t.ended_at = NULL
             WHERE t.id = ? AND (t.status IN ('PENDING', 'EXECUTING') OR (t.status = 'FAILED' AND t.retryable))
               AND s.lease_token = ? AND s.lease_expires_at >= UTC_TIMESTAMP(6)""";

    /**
     * The call is ours ({@code t.lease_token}) <em>and</em> our lease is still live: a holder paused past its TTL
     * is dead even if nobody took over yet, so it can neither commit a side effect nor put a result into the
     * successor's context. Inside the fenced transaction the session row is already locked by us.
     */
    static final String COMPLETE = """
            UPDATE tool_execution t JOIN chat_session s ON s.id = t.session_id
               SET t.status = 'COMPLETED', t.result = ?, t.ended_at = UTC_TIMESTAMP(6)
             WHERE t.id = ? AND t.status = 'EXECUTING' AND t.lease_token = ?
               AND s.lease_token = ? AND s.lease_expires_at >= UTC_TIMESTAMP(6)""";

    static final String FAIL = """
            UPDATE tool_execution t JOIN chat_session s ON s.id = t.session_id
               SET t.status = 'FAILED', t.retryable = ?, t.result = ?, t.ended_at = UTC_TIMESTAMP(6)
             WHERE t.id = ? AND t.status IN ('PENDING', 'EXECUTING') AND t.lease_token = ?
               AND s.lease_token = ? AND s.lease_expires_at >= UTC_TIMESTAMP(6)""";

    /** A stuck execution never ran to its commit (effect and COMPLETED commit together): safe to retry later. */
    static final String REAP = """
            UPDATE tool_execution
               SET status = 'FAILED', retryable = TRUE, ended_at = UTC_TIMESTAMP(6),
                   result = '{"error":"the tool call did not finish in time and was not applied; it may be retried"}'
             WHERE status IN ('PENDING', 'EXECUTING')
               AND COALESCE(started_at, created_at) < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND""";

    static final String PAIRS = """
            SELECT * FROM tool_execution
             WHERE session_id = ? AND span_from >= ? AND status IN ('COMPLETED', 'FAILED')
             ORDER BY id""";

    /** One row. */
    public record Execution(long id, long sessionId, long spanFrom, String idemKey, String callId, String toolName,
                            String argumentsJson, String status, boolean retryable, String result, String leaseToken) {
        public boolean done() {
            return "COMPLETED".equals(status) || ("FAILED".equals(status) && !retryable);
        }
    }

    static final RowMapper<Execution> ROW = (rs, i) -> new Execution(rs.getLong("id"), rs.getLong("session_id"),
            rs.getLong("span_from"), rs.getString("idem_key"), rs.getString("call_id"), rs.getString("tool_name"),
            rs.getString("arguments_json"), rs.getString("status"), rs.getBoolean("retryable"), rs.getString("result"),
            rs.getString("lease_token"));

    private static final Logger log = LoggerFactory.getLogger(ToolExecutions.class);
    /** ER_LOCK_DEADLOCK: InnoDB rolled the statement's transaction back to break a cycle. */
    static final int DEADLOCK = 1213;
    static final int ATTEMPTS = 3;

    private final JdbcTemplate jdbc;

    public ToolExecutions(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
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
                if (attempt >= ATTEMPTS || !deadlock(e) || TransactionSynchronizationManager.isActualTransactionActive()) {
                    throw e;
                }
                log.info("tool execution {}: deadlock victim, attempt {} of {}", what, attempt + 1, ATTEMPTS);
            }
        }
    }

    static boolean deadlock(Throwable e) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (t instanceof SQLException sql && sql.getErrorCode() == DEADLOCK) {
                return true;
            }
        }
        return false;
    }

    /** A new PENDING row, or the existing row with the same key (re-read after the unique index refused ours). */
    public Execution insertOrGet(Call call) {
        if (call.idemKey() != null) {
            List<Execution> existing = jdbc.query(BY_KEY, ROW, call.idemKey());
            if (!existing.isEmpty()) {
                return existing.getFirst();
            }
        }
        GeneratedKeyHolder keys = new GeneratedKeyHolder();
        try {
            int rows = statement("insert", () -> jdbc.update(c -> {
                PreparedStatement ps = c.prepareStatement(INSERT, Statement.RETURN_GENERATED_KEYS);
                ps.setLong(1, call.turnId());
                ps.setLong(2, call.spanFrom());
                ps.setString(3, call.idemKey());
                ps.setString(4, call.callId());
                ps.setString(5, call.toolName());
                ps.setString(6, call.argumentsJson());
                ps.setInt(7, call.ordinal());
                ps.setBoolean(8, call.sideEffect());
                ps.setString(9, call.leaseToken());
                ps.setLong(10, call.sessionId());
                ps.setString(11, call.leaseToken());
                return ps;
            }, keys));
            if (rows == 0) {
                return null; // lease lost
            }
        } catch (DuplicateKeyException raced) {
            return jdbc.query(BY_KEY, ROW, call.idemKey()).getFirst();
        }
        return byId(keys.getKey().longValue());
    }

    public Execution byId(long id) {
        return jdbc.queryForObject(BY_ID, ROW, id);
    }

    public boolean start(long id, long turnId, String leaseToken) {
        return statement("start", () -> jdbc.update(START, leaseToken, turnId, id, leaseToken)) == 1;
    }

    public boolean complete(long id, String result, String leaseToken) {
        return statement("complete", () -> jdbc.update(COMPLETE, result, id, leaseToken, leaseToken)) == 1;
    }

    public boolean fail(long id, boolean retryable, String result, String leaseToken) {
        return statement("fail", () -> jdbc.update(FAIL, retryable, result, id, leaseToken, leaseToken)) == 1;
    }

    public int reap(long olderThanMicros) {
        return jdbc.update(REAP, olderThanMicros);
    }

    public List<Execution> completedPairs(long sessionId, long fromSpan) {
        return jdbc.query(PAIRS, ROW, sessionId, fromSpan);
    }

    /** What a turn intends to call. */
    public record Call(long sessionId, long turnId, long spanFrom, String idemKey, String callId, String toolName,
                       String argumentsJson, int ordinal, boolean sideEffect, String leaseToken) {
    }
}
