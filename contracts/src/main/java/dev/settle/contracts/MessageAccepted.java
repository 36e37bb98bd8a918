package dev.settle.contracts;

import java.time.Instant;

/**
 * Published by ingest-api after the transaction that stored a user message committed.
 *
 * @param sessionId          internal session id (the Kafka key)
 * @param version            the session version after this message
 * @param acceptedAt         database time of the commit
 * @param oldestUnansweredAt database time of the oldest message not yet covered by a reply (bounds max-wait)
 * @param policy             the session's effective double-texting policy when it was accepted ({@code merge},
 *                           {@code enqueue} or {@code reject}); null when unknown (a retry, an older ingest-api)
 */
public record MessageAccepted(
        long sessionId, long version, Instant acceptedAt, Instant oldestUnansweredAt, String policy) {

    /** An event whose policy is unknown. */
    public MessageAccepted(long sessionId, long version, Instant acceptedAt, Instant oldestUnansweredAt) {
        this(sessionId, version, acceptedAt, oldestUnansweredAt, null);
    }

    /**
     * Whether the debounce worker records where this message's burst ends ({@code session_burst}): only the
     * {@code enqueue} policy reads it, and an unknown policy may be {@code enqueue}.
     */
    public boolean recordsBurstEnd() {
        return policy == null || policy.equals("enqueue");
    }
}
