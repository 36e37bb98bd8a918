package dev.settle.agent.tools;

/**
 * The call a tool is running for: its session, its execution (so a side-effecting tool's writes can name it, one
 * effect per execution) and its idempotency key (for effects outside Settle's database).
 */
public final class ToolCallContext {
    private static final ThreadLocal<Long> EXECUTION = new ThreadLocal<>();
    private static final ThreadLocal<Long> SESSION = new ThreadLocal<>();
    private static final ThreadLocal<String> KEY = new ThreadLocal<>();

    private ToolCallContext() {}

    public static long executionId() {
        Long id = EXECUTION.get();
        if (id == null) {
            throw new IllegalStateException("a @SideEffect tool ran outside the exactly-once executor");
        }
        return id;
    }

    public static long sessionId() {
        Long id = SESSION.get();
        if (id == null) {
            throw new IllegalStateException("a tool ran outside a turn");
        }
        return id;
    }

    /**
     * The stable idempotency key of this intended call: sha256 of session, the unanswered span it serves, tool
     * name, canonical arguments and the ordinal of this identical call in the turn, as 64 hex digits. Every attempt
     * at the same call (a retry, a takeover after a crash, a discarded turn's successor) gets the same key; a second
     * identical call the user really asked for in the same turn gets another.
     *
     * <p>Writes to Settle's database made inside the tool's transaction commit exactly once. A call to an outside
     * API cannot join that transaction: it is attempted <em>at least once</em> (the process can die after the call
     * and before the commit, and the successor calls again). Pass this key to the outside API as its idempotency
     * key (Stripe's {@code Idempotency-Key} header, for example) so that it applies the effect once.
     */
    public static String idempotencyKey() {
        String key = KEY.get();
        if (key == null) {
            throw new IllegalStateException("a tool ran outside the tool executor");
        }
        return key;
    }

    static void enter(long sessionId, Long executionId, String idempotencyKey) {
        SESSION.set(sessionId);
        EXECUTION.set(executionId);
        KEY.set(idempotencyKey);
    }

    static void exit() {
        SESSION.remove();
        EXECUTION.remove();
        KEY.remove();
    }
}
