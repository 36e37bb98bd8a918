package dev.settle.ingest.http;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * Failed authentications per client address, as a token bucket per address in this ingest instance: every
 * failure takes a token ({@code rate} per second come back, at most {@code burst} saved up); an address without a
 * token is refused (429) before its key is looked up, so guessing keys costs the guesser, not the database.
 * The address is the connection's peer ({@code request.getRemoteAddr()}): behind a proxy, let the proxy's
 * forwarded header set it ({@code server.forward-headers-strategy}). The table is bounded: past
 * {@link #MAX_ADDRESSES} addresses the full buckets (no recent failure) are dropped first. {@code rate} 0 turns the limit off.
 */
final class AuthFailureLimiter {
    static final int MAX_ADDRESSES = 100_000;
    private final double rate;
    private final double burst;
    private final ConcurrentMap<String, TokenBucket> buckets = new ConcurrentHashMap<>();

    AuthFailureLimiter(double rate, int burst) {
        this.rate = rate;
        this.burst = Math.max(1, burst);
    }

    /** @return 0 when the address may try a key, else the seconds until it may (for Retry-After) */
    long blockedFor(String address) {
        if (rate <= 0) {
            return 0;
        }
        TokenBucket bucket = buckets.get(address);
        return bucket == null ? 0 : bucket.waitSeconds(rate, burst);
    }

    /** Charges one failed authentication to the address. */
    void failed(String address) {
        if (rate <= 0) {
            return;
        }
        if (buckets.size() >= MAX_ADDRESSES) {
            buckets.values().removeIf(b -> b.waitSeconds(rate, burst) == 0 && b.full(rate, burst));
        }
        buckets.computeIfAbsent(address, a -> new TokenBucket(burst)).charge(rate, burst);
    }
}
