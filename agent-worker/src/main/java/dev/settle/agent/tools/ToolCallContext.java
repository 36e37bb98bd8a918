package dev.settle.agent.tools;

/** The execution a side-effecting tool is running for, so its writes can name it (one effect per execution). */
public final class ToolCallContext {
    private static final ThreadLocal<Long> EXECUTION = new ThreadLocal<>();
    private static final ThreadLocal<Long> SESSION = new ThreadLocal<>();

    private ToolCallContext() {
    }

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

    static void enter(long sessionId, Long executionId) {
        SESSION.set(sessionId);
        EXECUTION.set(executionId);
    }

    static void exit() {
        SESSION.remove();
        EXECUTION.remove();
    }
}
