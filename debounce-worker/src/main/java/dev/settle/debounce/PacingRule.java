package dev.settle.debounce;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

/**
 * The adaptive window: how long a session's timer waits after its latest message, learned from the session's own
 * pauses (docs/ARCHITECTURE.md, "The adaptive window"). Pure: no clock, no database.
 *
 * <p>Evidence, one sample per accepted message:
 * <ul>
 *   <li>a message that continues a burst (an earlier message was still unanswered when it arrived: its turn was
 *       merged, or interrupted by this message) adds the pause since the session's previous message, unless that
 *       pause is longer than the largest window, which no allowed window could have merged;</li>
 *   <li>a message that starts a burst adds 0 when the previous burst was a single message, so a session that
 *       sends single messages keeps the base window and a learned window decays when bursts end cleanly;</li>
 *   <li>an event no later than the session's previous message (redelivered or reordered) adds nothing.</li>
 * </ul>
 * The window is {@code clamp(quantile(samples, QUANTILE) × (1 + MARGIN), base, max)} over a ring of the last
 * {@link #SAMPLES} samples. A session with fewer than {@link #OWN_SAMPLES} samples of its own uses its tenant's
 * ring instead, which collects the same samples over all the tenant's sessions.
 */
public final class PacingRule {
    /** Samples kept in a ring (a session's, a tenant's). */
    public static final int SAMPLES = 16;
    /** A session with fewer samples of its own uses its tenant's ring. */
    public static final int OWN_SAMPLES = 3;
    /** The quantile of the ring the window covers. */
    static final double QUANTILE = 0.9;
    /** Added to the quantile, relative to it (a window of 1.25 × the 0.9 quantile). */
    static final double MARGIN = 0.25;

    public static final String BASE = "base";
    public static final String LEARNED = "learned";

    /** The window one message arms with, and whether it is the base window or a learned (longer) one. */
    public record Window(Duration length, String cause) {
        public long micros() {
            return length.toNanos() / 1_000;
        }
    }

    /** What the rule knows of a session before a message: its ring, its previous message, its burst so far. */
    public record Pacing(List<Long> samplesMillis, Instant lastMessageAt, int burstMessages) {
        public Pacing {
            samplesMillis = List.copyOf(samplesMillis);
        }
    }

    /**
     * What one message taught.
     *
     * @param pacing       the session's state after the message
     * @param sampleMillis the sample it added (to the session's ring and its tenant's), or null
     * @param window       the window the message arms with
     */
    public record Step(Pacing pacing, Long sampleMillis, Window window) {}

    private final Duration base;
    private final Duration max;

    /**
     * @param base the window when nothing is learned (the lower bound)
     * @param max  the largest window (the upper bound, and the longest pause that counts)
     */
    public PacingRule(Duration base, Duration max) {
        if (max.compareTo(base) < 0) {
            throw new IllegalArgumentException("the largest window " + max + " is shorter than the base " + base);
        }
        this.base = base;
        this.max = max;
    }

    public Window base() {
        return new Window(base, BASE);
    }

    /**
     * One accepted message.
     *
     * @param before         the session's state, null before its first message the rule saw
     * @param tenantSamples  its tenant's ring (empty when none)
     * @param acceptedAt     when the message was accepted
     * @param continuesBurst an earlier message of the session was unanswered when this one was accepted
     */
    public Step next(Pacing before, List<Long> tenantSamples, Instant acceptedAt, boolean continuesBurst) {
        if (before != null && !acceptedAt.isAfter(before.lastMessageAt())) {
            return new Step(before, null, window(before.samplesMillis(), tenantSamples));
        }
        Long sample = null;
        int burst;
        if (continuesBurst) {
            burst = before == null ? 2 : before.burstMessages() + 1;
            if (before != null) {
                Duration pause = Duration.between(before.lastMessageAt(), acceptedAt);
                if (pause.compareTo(max) <= 0) {
                    sample = pause.toMillis();
                }
            }
        } else {
            burst = 1;
            if (before != null && before.burstMessages() == 1) {
                sample = 0L;
            }
        }
        List<Long> own = before == null ? List.of() : before.samplesMillis();
        List<Long> samples = sample == null ? own : append(own, sample);
        List<Long> tenant = sample == null ? tenantSamples : append(tenantSamples, sample);
        return new Step(new Pacing(samples, acceptedAt, burst), sample, window(samples, tenant));
    }

    /** The window for a session with this ring of its own, in a tenant with that ring. */
    public Window window(List<Long> ownSamples, List<Long> tenantSamples) {
        return window(ownSamples.size() >= OWN_SAMPLES ? ownSamples : tenantSamples);
    }

    /** {@code clamp(quantile × (1 + MARGIN), base, max)}; the base window for an empty ring. */
    public Window window(List<Long> samples) {
        if (samples.isEmpty()) {
            return base();
        }
        long[] sorted = samples.stream().mapToLong(Long::longValue).sorted().toArray();
        long quantile = sorted[(int) Math.ceil(QUANTILE * sorted.length) - 1];
        Duration learned = Duration.ofMillis(Math.round(quantile * (1 + MARGIN)));
        if (learned.compareTo(base) <= 0) {
            return base();
        }
        return new Window(learned.compareTo(max) < 0 ? learned : max, LEARNED);
    }

    /** The ring with {@code sample} appended, keeping the last {@link #SAMPLES}. */
    static List<Long> append(List<Long> ring, long sample) {
        List<Long> out = new ArrayList<>(ring);
        out.add(sample);
        return out.size() > SAMPLES ? List.copyOf(out.subList(out.size() - SAMPLES, out.size())) : out;
    }

    /** A ring as stored: milliseconds, comma-separated, oldest first ({@code ""} for none). */
    public static String format(List<Long> ring) {
        return String.join(",", ring.stream().map(String::valueOf).toList());
    }

    /** A stored ring; null or blank is empty. */
    public static List<Long> parse(String stored) {
        if (stored == null || stored.isBlank()) {
            return List.of();
        }
        return Arrays.stream(stored.split(",")).map(Long::valueOf).toList();
    }
}
