package dev.settle.schema;

import java.sql.SQLException;

/** What the server answered, read from anywhere in an exception's causes (Spring wraps the driver's SQLException). */
public final class SqlErrors {
    private SqlErrors() {}

    /** @return true when {@code e} or one of its causes is an {@link SQLException} with the server's error {@code code} */
    public static boolean has(Throwable e, int code) {
        return Causes.first(e, t -> t instanceof SQLException sql && sql.getErrorCode() == code) != null;
    }
}
