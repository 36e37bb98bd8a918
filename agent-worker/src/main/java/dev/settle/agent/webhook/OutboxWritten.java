package dev.settle.agent.webhook;

/**
 * A delivery row was written in the current transaction; after it commits, this instance's dispatcher polls at
 * once instead of at its next poll interval (other instances still find it by polling).
 */
public record OutboxWritten(long sessionId) {}
