package dev.settle.schema;

import org.springframework.jdbc.core.ArgumentPreparedStatementSetter;
import org.springframework.jdbc.core.JdbcTemplate;

import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;

/**
 * Reads what an UPDATE set with {@code col = LAST_INSERT_ID(expr)}, or the key an INSERT generated, from the
 * statement's OK packet: the server sends the value back with the affected-row count, so reserving a number (an
 * event seq, a lease epoch) is one round trip and a new row's key costs no result set. Connector/J exposes it on its
 * statement ({@code StatementImpl.getLastInsertID()}). With any other driver an UPDATE's value is 0 and the caller
 * asks {@code SELECT LAST_INSERT_ID()} on the same connection; an INSERT's key is read from its generated keys.
 */
public final class OkPacket {
    private OkPacket() {}

    /** A reservation: rows the UPDATE matched, and the LAST_INSERT_ID it set (0 when not known). */
    public record Reserved(int rows, long lastInsertId) {}

    /** Runs {@code sql} (an UPDATE setting LAST_INSERT_ID(expr)) with {@code args} on the caller's connection. */
    public static Reserved update(JdbcTemplate jdbc, String sql, Object... args) {
        return jdbc.execute(sql, (PreparedStatement ps) -> {
            for (int i = 0; i < args.length; i++) {
                ps.setObject(i + 1, args[i]);
            }
            int rows = ps.executeUpdate();
            return new Reserved(rows, rows == 0 ? 0 : lastInsertId(ps));
        });
    }

    /**
     * Runs {@code sql}, a single-row INSERT into a table with an AUTO_INCREMENT key, with {@code args} and returns the
     * new row's key as its OK packet carries it: with Connector/J no generated-keys result set is built (nor read
     * through a row mapper); any other driver's generated keys are read.
     */
    public static long insert(JdbcTemplate jdbc, String sql, Object... args) {
        return jdbc.execute(c -> c.prepareStatement(sql, Statement.RETURN_GENERATED_KEYS), (PreparedStatement ps) -> {
            new ArgumentPreparedStatementSetter(args).setValues(ps);
            if (ps.executeUpdate() != 1) {
                throw new IllegalStateException("a single-row insert did not insert one row: " + sql);
            }
            long key = lastInsertId(ps);
            if (key > 0) {
                return key;
            }
            try (ResultSet keys = ps.getGeneratedKeys()) {
                if (!keys.next()) {
                    throw new IllegalStateException("no generated key: " + sql);
                }
                return keys.getLong(1);
            }
        });
    }

    static long lastInsertId(PreparedStatement ps) throws SQLException {
        if (ps.isWrapperFor(com.mysql.cj.jdbc.StatementImpl.class)) {
            return ps.unwrap(com.mysql.cj.jdbc.StatementImpl.class).getLastInsertID();
        }
        return 0;
    }
}
