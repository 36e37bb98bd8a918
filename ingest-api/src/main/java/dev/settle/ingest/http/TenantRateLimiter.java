package dev.settle.ingest.http;

import dev.settle.ingest.IngestSettings;
import org.springframework.stereotype.Component;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * A per-tenant request rate, as a token bucket per tenant in this ingest instance: {@code rate} tokens per
 * second, at most {@code burst} saved up; every request takes one. With N instances behind a load balancer a
 * tenant gets up to N × rate (the limit protects each instance and the database from one noisy tenant; it is
 * not a billing meter). {@code rate} 0 turns the limit off.
 */
@Component
class TenantRateLimiter {
    private final double rate;
    private final double burst;
    private final ConcurrentMap<String, TokenBucket> buckets = new ConcurrentHashMap<>();

    public TenantRateLimiter(IngestSettings settings) {
        this.rate = settings.limits().rate();
        this.burst = Math.max(1, settings.limits().burst());
    }

    /** @return 0 when the request may pass, else the seconds until a token is free (for Retry-After) */
    public long acquire(String tenant) {
        if (rate <= 0) {
            return 0;
        }
        return buckets.computeIfAbsent(tenant, t -> new TokenBucket(burst)).take(rate, burst);
    }
}
