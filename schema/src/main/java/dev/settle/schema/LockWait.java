package dev.settle.schema;

import org.springframework.jdbc.core.ArgumentPreparedStatementSetter;
import org.springframework.jdbc.core.JdbcTemplate;

import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.time.Duration;

/**
 * A write that waits at most a bound for the row locks it needs, the same on MySQL and MariaDB. Neither offers a
 * per-statement lock wait that both understand ({@code innodb_lock_wait_timeout} is per session and in whole
 * seconds; MySQL's {@code SET_VAR} hint and MariaDB's {@code SET STATEMENT} differ), so the bound is the driver's
 * query timeout: Connector/J keeps it in milliseconds and enforces it with {@code KILL QUERY} from a second
 * connection; any other driver gets JDBC's, in whole seconds rounded up. The statement then fails (a
 * {@link org.springframework.dao.DataAccessException}) with its own changes undone; the locks it took are held until
 * its transaction, which the caller must roll back, ends. The bound covers the statement's whole run, not only its
 * waits, so it must sit far above the statement's own time on a loaded server; and when the second connection cannot
 * be opened (the server at {@code max_connections}) the statement waits as long as the server lets it.
 */
public final class LockWait {
    private LockWait() {}

    /** Runs {@code sql} with {@code args} on the caller's connection, giving up after {@code bound}. */
    public static int update(JdbcTemplate jdbc, Duration bound, String sql, Object... args) {
        return jdbc.execute(sql, (PreparedStatement ps) -> {
            bound(ps, bound);
            new ArgumentPreparedStatementSetter(args).setValues(ps);
            return ps.executeUpdate();
        });
    }

    static void bound(PreparedStatement ps, Duration bound) throws SQLException {
        if (ps.isWrapperFor(com.mysql.cj.jdbc.JdbcStatement.class)) {
            ps.unwrap(com.mysql.cj.jdbc.JdbcStatement.class).setTimeoutInMillis(bound.toMillis());
        } else {
            ps.setQueryTimeout((int) Math.max(1, (bound.toMillis() + 999) / 1000));
        }
    }
}
