package dev.settle.schema;

import java.util.Set;

/** The double-texting policies: the values of {@code chat_session.policy} and {@code tenant.default_policy}. */
public final class Policies {
    public static final Set<String> ALL = Set.of("merge", "enqueue", "reject");

    private Policies() {}
}
