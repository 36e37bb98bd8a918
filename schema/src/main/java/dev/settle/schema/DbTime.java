package dev.settle.schema;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;

/**
 * Settle stores every timestamp as DATETIME(6) in UTC written by {@code UTC_TIMESTAMP(6)}; this reads them
 * back without any time-zone conversion by the driver or the JVM, and binds them back as text.
 *
 * <p>Binding is text with all six fractional digits ({@code 2026-11-29 21:33:47.123456}), never a
 * {@code LocalDateTime} or {@code Timestamp}: Connector/J drops the fraction of a temporal parameter when the
 * server's version is below 5.6.4, and MariaDB before 11 announces itself as {@code 5.5.5-10.x}. Found on the
 * local MariaDB 10.11: the timer firer's guarded delete ({@code fire_at = ?}) matched nothing and no timer ever
 * fired; arming lost up to a second of its window. The server parses the text into DATETIME(6) exactly, on
 * every MariaDB and MySQL version. {@code DbTimeBindingTest} pins it.
 */
public final class DbTime {
    private static final DateTimeFormatter TEXT = DateTimeFormatter.ofPattern("yyyy-MM-dd HH:mm:ss.SSSSSS");

    private DbTime() {}

    public static Instant instant(ResultSet rs, String column) throws SQLException {
        LocalDateTime value = rs.getObject(column, LocalDateTime.class);
        return value == null ? null : value.toInstant(ZoneOffset.UTC);
    }

    /** A UTC instant for a DATETIME(6) parameter, as text with six fractional digits. */
    public static String utc(Instant instant) {
        return instant == null ? null : TEXT.format(LocalDateTime.ofInstant(instant, ZoneOffset.UTC));
    }

    /** A DATETIME(6) value read back (UTC wall time) for a parameter, as text with six fractional digits. */
    public static String text(LocalDateTime value) {
        return value == null ? null : TEXT.format(value);
    }
}
