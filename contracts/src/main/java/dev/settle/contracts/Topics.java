package dev.settle.contracts;

/**
 * Kafka topics of Settle. Every event is keyed by the session's internal id, so one session's events
 * stay in one partition and in order. Events are wake-up hints: the database is the truth, so a lost or
 * repeated event costs latency at most, never correctness.
 */
public final class Topics {
    /**
     * ingest-api → debounce-worker: a user message was committed ({@link MessageAccepted}), or its user is typing
     * ({@link TypingSignal}, marked by the header {@link #EVENT_TYPE}). One topic, so that a session's signals stay
     * in order with its messages.
     */
    public static final String MESSAGE_ACCEPTED = "settle.message-accepted";

    /** Record header naming an event on {@link #MESSAGE_ACCEPTED} that is not a {@link MessageAccepted}. */
    public static final String EVENT_TYPE = "settle-event";
    /** debounce-worker → agent-worker: a session's timer fired; answer what is pending. */
    public static final String SESSION_READY = "settle.session-ready";

    public static final int PARTITIONS = 12;

    private Topics() {}
}
