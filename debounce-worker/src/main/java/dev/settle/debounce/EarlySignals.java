package dev.settle.debounce;

import dev.settle.contracts.TypingSignal;

import java.time.Duration;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Typing signals that found no timer to hold, kept for one hold's length in case the message they follow has not
 * been armed yet.
 *
 * <p>Ingest publishes a signal only after reading the session's message committed, but that message's
 * {@code MessageAccepted} is queued by the accepting request after its commit, and may come from another ingest
 * instance (another producer): the signal can reach the partition first. The event follows within moments on the
 * same partition, so the same consumer sees it; {@link TypingHolds#armed} then applies the signal it kept, and
 * the signal's staleness rule decides as it would have in order. Nothing is durable: a rebalance between the two
 * loses the signal, as any lost signal (the client repeats it).
 *
 * <p>Bounded: one signal per session (the latest), each kept for {@code hold} after it arrived, at most
 * {@link #CAPACITY} sessions; when full of unexpired ones, a new signal is not kept.
 */
final class EarlySignals {
    static final int CAPACITY = 10_000;

    private record Kept(Instant signalAt, long expiresNanos) {}

    private final Map<Long, Kept> kept = new ConcurrentHashMap<>();
    private final long holdNanos;

    EarlySignals(Duration hold) {
        this.holdNanos = hold.toNanos();
    }

    /**
     * Keeps a signal that held nothing.
     *
     * @return false when it was not kept: full of unexpired signals
     */
    boolean keep(TypingSignal signal) {
        long now = System.nanoTime();
        if (kept.size() >= CAPACITY) {
            kept.values().removeIf(k -> k.expiresNanos() - now <= 0);
            if (kept.size() >= CAPACITY) {
                return false;
            }
        }
        kept.merge(
                signal.sessionId(),
                new Kept(signal.signalAt(), now + holdNanos),
                (old, next) -> old.signalAt().isAfter(next.signalAt()) ? old : next);
        return true;
    }

    /** The kept, unexpired signal of the session, removed; null when there is none. */
    TypingSignal take(long sessionId) {
        Kept k = kept.remove(sessionId);
        if (k == null || k.expiresNanos() - System.nanoTime() <= 0) {
            return null;
        }
        return new TypingSignal(sessionId, k.signalAt());
    }

    /** How many signals are kept, expired ones included. */
    int size() {
        return kept.size();
    }
}
