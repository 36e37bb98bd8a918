package dev.settle.schema;

import org.springframework.jdbc.core.BatchPreparedStatementSetter;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import tools.jackson.databind.json.JsonMapper;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.util.List;
import java.util.Map;

/**
 * Appends to a session's event log (the SSE stream). Must run inside the caller's transaction: the seq is
 * taken by bumping chat_session.event_seq, whose row lock lasts until that transaction commits, so events
 * commit in seq order. With a lease token the append is fenced: a holder that lost its lease appends
 * nothing ({@link #append} returns false).
 *
 * <ol>
 *   <li>{@link #RESERVE}: {@code event_seq = LAST_INSERT_ID(event_seq + n)} (guarded by the lease when given).
 *       The server returns that value in the statement's OK packet ({@link OkPacket}): the last seq reserved,
 *       without another round trip ({@code SELECT LAST_INSERT_ID()} on the same connection if a driver does not
 *       hand it back).</li>
 *   <li>Insert the n events with seqs {@code top - n + 1 .. top}.</li>
 * </ol>
 */
public final class SessionEvents {
    static final String RESERVE = "UPDATE chat_session SET event_seq = LAST_INSERT_ID(event_seq + ?) WHERE id = ?";
    static final String RESERVE_FENCED = """
            UPDATE chat_session s SET event_seq = LAST_INSERT_ID(event_seq + ?)
             WHERE id = ? AND\s""" + SessionRules.LEASE_OURS;
    static final String INSERT = """
            INSERT INTO session_event (session_id, seq, type, turn_id, chunk_seq, data, created_at)
            VALUES (?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6))""";
    /** The row of {@link #INSERT}: {@link #insertReserved(JdbcTemplate, List)} repeats it, one per event. */
    static final String INSERT_ROW = "(?, ?, ?, ?, ?, ?, UTC_TIMESTAMP(6))";

    private static final JsonMapper JSON = JsonMapper.builder().build();

    /** One event to append. */
    public record Event(String type, Long turnId, Integer chunkSeq, Map<String, Object> data) {
        public static Event of(String type, Long turnId, Map<String, Object> data) {
            return new Event(type, turnId, null, data);
        }
    }

    private SessionEvents() {}

    /** @return false when {@code leaseToken} is given and is no longer the live lease (nothing appended) */
    public static boolean append(JdbcTemplate jdbc, long sessionId, String leaseToken, List<Event> events) {
        if (events.isEmpty()) {
            return true;
        }
        if (!TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException("session events must be appended inside a transaction");
        }
        OkPacket.Reserved reserved = leaseToken == null
                ? OkPacket.update(jdbc, RESERVE, events.size(), sessionId)
                : OkPacket.update(jdbc, RESERVE_FENCED, events.size(), sessionId, leaseToken);
        if (reserved.rows() == 0) {
            return false;
        }
        long top = reserved.lastInsertId() > 0
                ? reserved.lastInsertId()
                : jdbc.queryForObject("SELECT LAST_INSERT_ID()", Long.class);
        insert(jdbc, sessionId, top - events.size() + 1, events);
        return true;
    }

    /**
     * Inserts {@code events} with seqs {@code first ..} that the caller already reserved in its own transaction, by
     * bumping {@code chat_session.event_seq} in a statement of its own that holds the session row lock until commit
     * (ingest's session upsert does, saving the separate reservation).
     */
    public static void insertReserved(JdbcTemplate jdbc, long sessionId, long first, Event event) {
        insertReserved(jdbc, sessionId, first, List.of(event));
    }

    /** {@link #insertReserved(JdbcTemplate, long, long, Event)} for several events, seqs {@code first ..} in order. */
    public static void insertReserved(JdbcTemplate jdbc, long sessionId, long first, List<Event> events) {
        if (!TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException("session events must be appended inside a transaction");
        }
        insert(jdbc, sessionId, first, events);
    }

    /** An event at the seq its caller reserved in its session (see {@link #insertReserved(JdbcTemplate, long, long, Event)}). */
    public record ReservedEvent(long sessionId, long seq, Event event) {}

    /**
     * Inserts events of any sessions, each at the seq its caller reserved as {@link #insertReserved(JdbcTemplate,
     * long, long, Event)} requires, in one statement ({@link #INSERT} with one row per event), whatever the driver
     * does with batches.
     */
    public static void insertReserved(JdbcTemplate jdbc, List<ReservedEvent> events) {
        if (events.isEmpty()) {
            return;
        }
        if (!TransactionSynchronizationManager.isActualTransactionActive()) {
            throw new IllegalStateException("session events must be appended inside a transaction");
        }
        StringBuilder rows = new StringBuilder(INSERT_ROW.length() * events.size() + 2 * events.size());
        Object[] args = new Object[6 * events.size()];
        int a = 0;
        for (ReservedEvent r : events) {
            rows.append(rows.isEmpty() ? "" : ", ").append(INSERT_ROW);
            args[a++] = r.sessionId();
            args[a++] = r.seq();
            args[a++] = r.event().type();
            args[a++] = r.event().turnId();
            args[a++] = r.event().chunkSeq();
            args[a++] = JSON.writeValueAsString(r.event().data());
        }
        jdbc.update(INSERT.replace(INSERT_ROW, rows), args);
    }

    private static void insert(JdbcTemplate jdbc, long sessionId, long first, List<Event> events) {
        if (events.size() == 1) {
            Event e = events.getFirst();
            jdbc.update(
                    INSERT, sessionId, first, e.type(), e.turnId(), e.chunkSeq(), JSON.writeValueAsString(e.data()));
            return;
        }
        jdbc.batchUpdate(INSERT, new BatchPreparedStatementSetter() {
            @Override
            public void setValues(PreparedStatement ps, int i) throws SQLException {
                Event e = events.get(i);
                ps.setLong(1, sessionId);
                ps.setLong(2, first + i);
                ps.setString(3, e.type());
                ps.setObject(4, e.turnId());
                ps.setObject(5, e.chunkSeq());
                ps.setString(6, JSON.writeValueAsString(e.data()));
            }

            @Override
            public int getBatchSize() {
                return events.size();
            }
        });
    }

    public static boolean append(JdbcTemplate jdbc, long sessionId, String leaseToken, Event event) {
        return append(jdbc, sessionId, leaseToken, List.of(event));
    }
}
