package dev.settle.agent.webhook;

import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.random.RandomGenerator;

/**
 * When the next attempt of a delivery is due: the configured delays ({@code SETTLE_WEBHOOK_SCHEDULE}, the delay
 * before attempt 1, 2, ...), each stretched or shrunk by a uniform random jitter of at most ±20 %, so that
 * deliveries that failed together (an endpoint outage) do not come back together.
 *
 * <p>The random generator is injected: seeded in tests ({@code settle.webhook.jitter-seed}). It must be safe for
 * concurrent use ({@link java.util.Random} is).
 */
final class RetrySchedule {
    /** The jitter bound: each delay is multiplied by a factor drawn uniformly from [0.8, 1.2]. */
    public static final double JITTER = 0.2;

    private final List<Duration> delays;
    private final RandomGenerator random;

    public RetrySchedule(List<Duration> delays, RandomGenerator random) {
        this.delays = List.copyOf(delays);
        this.random = random;
    }

    /** How many attempts a delivery gets (per round: an operator retry starts a new round). */
    public int attempts() {
        return delays.size();
    }

    /** The jittered delay before the first attempt, from the moment the reply is committed. */
    public Duration first() {
        return jittered(delays.getFirst(), random);
    }

    /**
     * @param attemptsMade attempts made in this round so far (1 after the first)
     * @return the jittered delay before the next attempt, or empty when the schedule is exhausted
     */
    public Optional<Duration> after(int attemptsMade) {
        if (attemptsMade < 0 || attemptsMade >= delays.size()) {
            return Optional.empty();
        }
        return Optional.of(jittered(delays.get(attemptsMade), random));
    }

    /** {@code delay × u} with u uniform in [1 − {@link #JITTER}, 1 + {@link #JITTER}]; one draw per call. */
    static Duration jittered(Duration delay, RandomGenerator random) {
        double factor = 1 + random.nextDouble(-JITTER, JITTER);
        return Duration.ofNanos(Math.round(delay.toNanos() * factor));
    }
}
