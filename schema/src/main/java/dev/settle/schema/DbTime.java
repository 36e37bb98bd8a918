package dev.settle.schema;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;

/**
 * Settle stores every timestamp as DATETIME(6) in UTC written by {@code UTC_TIMESTAMP(6)}; this reads them
 * back without any time-zone conversion by the driver or the JVM.
 */
public final class DbTime {
    private DbTime() {
    }

    public static Instant instant(ResultSet rs, String column) throws SQLException {
        LocalDateTime value = rs.getObject(column, LocalDateTime.class);
        return value == null ? null : value.toInstant(ZoneOffset.UTC);
    }

    /** For binding a UTC instant into a DATETIME(6) parameter. */
    public static LocalDateTime utc(Instant instant) {
        return instant == null ? null : LocalDateTime.ofInstant(instant, ZoneOffset.UTC);
    }
}
