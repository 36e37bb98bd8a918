package dev.settle.schema;

import org.springframework.dao.DataIntegrityViolationException;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * A conditional insert into a table with an {@code AUTO_INCREMENT} key is a single-row {@code INSERT ... VALUES} whose
 * {@code session_id} (a NOT NULL column) is a scalar subquery: the session's id when the condition holds, NULL when it
 * does not, which the column refuses (error {@value #REFUSED} for a single-row insert in every {@code sql_mode}):
 * nothing is inserted, and the caller reads the refusal with {@link #refused}.
 *
 * <p>Not {@code INSERT ... SELECT ... WHERE condition}: under {@code innodb_autoinc_lock_mode = 1}, MariaDB's default
 * (MySQL 8.4's is 2), such a statement holds the table's AUTO-INC lock until it ends, so one that stalls (it waits for
 * a lock on its row's place or key, or its server thread is descheduled on a loaded machine) holds up every insert
 * into the table, of every session: every turn's begin, every POST's message. A single-row {@code INSERT ... VALUES}
 * takes the key's counter under a mutex and lets go at once ({@code AutoIncLockScopeTest}).
 *
 * <p>The subquery is a locking read (InnoDB reads consistently under READ COMMITTED only in {@code INSERT ... SELECT},
 * {@code UPDATE} and {@code CREATE ... SELECT}): it holds a shared lock on the rows it reads until the transaction ends,
 * which for an autocommit insert is the statement's end.
 */
public final class GuardedInsert {
    private GuardedInsert() {}

    /** ER_BAD_NULL_ERROR: a single-row INSERT gave a NOT NULL column NULL. */
    public static final int REFUSED = 1048;

    /**
     * The value of {@code session_id} while the caller holds the session's live lease ({@link SessionRules#LEASE_OURS}),
     * else NULL. Parameters: the session id, the lease token.
     */
    public static final String SESSION_IF_LEASE_OURS =
            "(SELECT s.id FROM chat_session s WHERE s.id = ? AND " + SessionRules.LEASE_OURS + ")";

    /**
     * Runs the guarded insert {@code sql} with {@code args}.
     *
     * @return the new row's AUTO_INCREMENT key, or null when the guard refused it (nothing inserted); any other failure
     *     (a duplicate key among them) is thrown
     */
    public static Long insert(JdbcTemplate jdbc, String sql, Object... args) {
        try {
            return OkPacket.insert(jdbc, sql, args);
        } catch (DataIntegrityViolationException e) {
            if (refused(e)) {
                return null;
            }
            throw e;
        }
    }

    /** @return true when {@code e} is a guarded insert's refusal: its condition did not hold, nothing was inserted */
    static boolean refused(Throwable e) {
        return SqlErrors.has(e, REFUSED);
    }
}
