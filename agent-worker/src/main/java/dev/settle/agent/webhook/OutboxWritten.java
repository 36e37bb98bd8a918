package dev.settle.agent.webhook;

/**
 * A delivery row was written in the current transaction; after it commits, this instance's dispatcher sends its
 * first attempt when the outbox claimed it ({@code claim}), else polls at once instead of at its next poll
 * interval (other instances still find it by polling).
 */
public record OutboxWritten(long sessionId, DeliveryQueue.Claim claim) {}
