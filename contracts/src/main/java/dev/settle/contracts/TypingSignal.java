package dev.settle.contracts;

import java.time.Instant;

/**
 * Published by ingest-api when a client says its user is typing in a session that has unanswered messages. It
 * travels on {@link Topics#MESSAGE_ACCEPTED} beside the session's {@link MessageAccepted} events, keyed by the same
 * session id, and is told apart by the header {@link Topics#EVENT_TYPE} = {@link #TYPE}. A hint only: nothing
 * durable stands behind it, and a lost or late signal costs at most one early turn.
 *
 * @param sessionId internal session id (the Kafka key)
 * @param signalAt  database time at which ingest-api received the signal
 */
public record TypingSignal(long sessionId, Instant signalAt) {
    /** The value of {@link Topics#EVENT_TYPE} on a typing signal. */
    public static final String TYPE = "typing";
}
