package dev.settle.contracts;

import java.time.Instant;

/**
 * Published by debounce-worker when a session's timer fires.
 *
 * @param sessionId internal session id (the Kafka key)
 * @param version   highest version the timer had seen when it fired (a hint; the agent re-reads the row)
 * @param cause     {@code window}, {@code typing} (a typing signal held the timer until it fired),
 *                  {@code maxwait} or {@code sweeper}
 * @param firedAt   database time of the fire
 */
public record SessionReady(long sessionId, long version, String cause, Instant firedAt) {}
