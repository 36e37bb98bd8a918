package dev.settle.ingest.http;

import dev.settle.ingest.IngestSettings;
import org.springframework.stereotype.Component;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * A per-tenant request rate, as token buckets per tenant in this ingest instance, one per {@link RateBucket.Bucket}:
 * {@code rate} tokens per second, at most {@code burst} saved up, each; every request takes one from its handler's
 * bucket ({@link RouteAccess}). With N instances behind a load balancer a tenant gets up to N × rate per bucket (the
 * limit protects each instance and the database from one noisy tenant; it is not a billing meter). {@code rate} 0
 * turns the limit off.
 */
@Component
class TenantRateLimiter {
    private final double rate;
    private final double burst;
    private final ConcurrentMap<Key, TokenBucket> buckets = new ConcurrentHashMap<>();

    private record Key(String tenant, RateBucket.Bucket bucket) {}

    public TenantRateLimiter(IngestSettings settings) {
        this.rate = settings.limits().rate();
        this.burst = Math.max(1, settings.limits().burst());
    }

    /** @return 0 when the request may pass, else the seconds until a token is free (for Retry-After) */
    public long acquire(String tenant, RateBucket.Bucket bucket) {
        if (rate <= 0) {
            return 0;
        }
        return buckets.computeIfAbsent(new Key(tenant, bucket), k -> new TokenBucket(burst))
                .take(rate, burst);
    }
}
