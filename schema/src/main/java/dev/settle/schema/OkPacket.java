package dev.settle.schema;

import org.springframework.jdbc.core.JdbcTemplate;

import java.sql.PreparedStatement;
import java.sql.SQLException;

/**
 * Reads what an UPDATE set with {@code col = LAST_INSERT_ID(expr)} from the statement's OK packet: the server
 * sends the value back with the affected-row count, so reserving a number (an event seq, a lease epoch) is one
 * round trip. Connector/J exposes it on its statement ({@code StatementImpl.getLastInsertID()}) without building
 * a generated-keys result set; any other driver gets 0 and the caller asks {@code SELECT LAST_INSERT_ID()} on the
 * same connection.
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

    static long lastInsertId(PreparedStatement ps) throws SQLException {
        if (ps.isWrapperFor(com.mysql.cj.jdbc.StatementImpl.class)) {
            return ps.unwrap(com.mysql.cj.jdbc.StatementImpl.class).getLastInsertID();
        }
        return 0;
    }
}
