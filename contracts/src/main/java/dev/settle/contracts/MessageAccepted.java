package dev.settle.contracts;

import java.time.Instant;

/**
 * Published by ingest-api after the transaction that stored a user message committed.
 *
 * @param sessionId          internal session id (the Kafka key)
 * @param version            the session version after this message
 * @param acceptedAt         database time of the commit
 * @param oldestUnansweredAt database time of the oldest message not yet covered by a reply (bounds max-wait)
 */
public record MessageAccepted(long sessionId, long version, Instant acceptedAt, Instant oldestUnansweredAt) {}
