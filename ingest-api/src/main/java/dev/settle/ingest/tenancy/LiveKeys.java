package dev.settle.ingest.tenancy;

import java.time.Duration;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Issued keys a lookup found live, trusted for {@code settle.auth.key-cache} (100 ms by default) without another
 * lookup, so a client that sends many requests with one key costs one indexed read per period per instance, not one
 * per request. The rules:
 * <ul>
 *   <li>Only keys found live are kept, by the hash of the key: a wrong key is never kept (wrong keys are bounded by
 *       {@code AuthFailureLimiter} instead) and cannot fill this.</li>
 *   <li>A revocation on this instance forgets the key at once ({@link #forget}), and a lookup that began before it
 *       is not kept ({@link #remember} of an older generation): whatever read the key live before the revocation
 *       committed, no request that starts after {@code revoke} returned is let in here.</li>
 *   <li>Another instance trusts what it found for at most one period: it refuses a revoked key at most
 *       {@code key-cache} after the revocation.</li>
 * </ul>
 * {@link #remember} and {@link #forget} exclude each other; reads take no lock.
 */
final class LiveKeys {
    /** Beyond this many kept keys, expired ones are dropped when the next is kept. */
    private static final int SWEEP_ABOVE = 10_000;

    private record Kept(String tenant, long keyId, long until) {}

    private final Map<String, Kept> byHash = new ConcurrentHashMap<>();
    private final long periodNanos;
    private long generation;

    LiveKeys(Duration period) {
        this.periodNanos = period.toNanos();
    }

    /** @return the tenant of a key found live less than a period ago, or null */
    String tenantOf(String keyHash) {
        Kept kept = byHash.get(keyHash);
        if (kept == null) {
            return null;
        }
        if (System.nanoTime() - kept.until() >= 0) {
            byHash.remove(keyHash, kept);
            return null;
        }
        return kept.tenant();
    }

    /** Taken before a lookup, handed to {@link #remember} after it. */
    synchronized long generation() {
        return generation;
    }

    /** Keeps a key found live by a lookup that began in {@code since}, unless a revocation happened meanwhile. */
    synchronized void remember(String keyHash, String tenant, long keyId, long since) {
        if (periodNanos == 0 || since != generation) {
            return;
        }
        long now = System.nanoTime();
        if (byHash.size() >= SWEEP_ABOVE) {
            byHash.values().removeIf(k -> now - k.until() >= 0);
        }
        byHash.put(keyHash, new Kept(tenant, keyId, now + periodNanos));
    }

    /** A key was revoked: forget it, and keep nothing a lookup read before now. */
    synchronized void forget(long keyId) {
        generation++;
        byHash.values().removeIf(k -> k.keyId() == keyId);
    }
}
