package dev.settle.schema;

import java.util.function.Predicate;

/**
 * The one walk down an exception's causes (frameworks wrap what happened: Spring the driver's SQLException,
 * langchain4j the HTTP failure, a tool's proxy its argument error). A cause that names itself ends the walk.
 */
public final class Causes {
    private Causes() {}

    /** @return the first of {@code e} and its causes that matches, or null */
    public static Throwable first(Throwable e, Predicate<Throwable> matches) {
        for (Throwable t = e; t != null; t = t.getCause() == t ? null : t.getCause()) {
            if (matches.test(t)) {
                return t;
            }
        }
        return null;
    }

    /** @return the first of {@code e} and its causes that is a {@code type}, or null */
    public static <T extends Throwable> T first(Throwable e, Class<T> type) {
        return type.cast(first(e, type::isInstance));
    }

    /** @return the innermost cause of {@code e} ({@code e} itself when it has none) */
    public static Throwable root(Throwable e) {
        Throwable root = e;
        while (root.getCause() != null && root.getCause() != root) {
            root = root.getCause();
        }
        return root;
    }
}
