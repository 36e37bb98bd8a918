package dev.settle.ingest.http;

/**
 * One token bucket: {@code rate} tokens per second come back, at most {@code burst} are saved up. The rate and
 * burst are passed on each call (they are the owner's settings, the same for all of its buckets).
 */
final class TokenBucket {
    private double tokens;
    private long refilledAt;

    TokenBucket(double burst) {
        this.tokens = burst;
        this.refilledAt = System.nanoTime();
    }

    private void refill(double rate, double burst) {
        long now = System.nanoTime();
        tokens = Math.min(burst, tokens + (now - refilledAt) / 1e9 * rate);
        refilledAt = now;
    }

    private long secondsToNextToken(double rate) {
        return tokens >= 1 ? 0 : Math.max(1, (long) Math.ceil((1 - tokens) / rate));
    }

    /** @return 0 when a token was taken, else the seconds until one is there (for Retry-After) */
    synchronized long take(double rate, double burst) {
        refill(rate, burst);
        if (tokens >= 1) {
            tokens -= 1;
            return 0;
        }
        return secondsToNextToken(rate);
    }

    /** Takes a token whether or not one is there (never below zero). */
    synchronized void charge(double rate, double burst) {
        refill(rate, burst);
        tokens = Math.max(0, tokens - 1);
    }

    /** @return 0 when a token is there, else the seconds until one is */
    synchronized long waitSeconds(double rate, double burst) {
        refill(rate, burst);
        return secondsToNextToken(rate);
    }

    synchronized boolean full(double rate, double burst) {
        refill(rate, burst);
        return tokens >= burst;
    }
}
