package dev.settle.agent.webhook;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The schedule's jitter: within ±20 % on every draw, spread over the whole band, reproducible with a seed. */
class WebhookJitterTest {

    @Test
    void every_draw_is_within_20_percent_and_the_draws_cover_the_band() {
        Random random = new Random(7);
        for (Duration d :
                List.of(Duration.ofMillis(200), Duration.ofSeconds(5), Duration.ofMinutes(5), Duration.ofHours(10))) {
            long lo = Long.MAX_VALUE;
            long hi = Long.MIN_VALUE;
            Set<Long> distinct = new HashSet<>();
            for (int i = 0; i < 20_000; i++) {
                long n = RetrySchedule.jittered(d, random).toNanos();
                assertTrue(n >= d.toNanos() * 0.8 && n <= d.toNanos() * 1.2, d + " drew " + Duration.ofNanos(n));
                lo = Math.min(lo, n);
                hi = Math.max(hi, n);
                distinct.add(n);
            }
            assertTrue(lo < d.toNanos() * 0.81, d + ": lowest draw " + Duration.ofNanos(lo));
            assertTrue(hi > d.toNanos() * 1.19, d + ": highest draw " + Duration.ofNanos(hi));
            assertTrue(distinct.size() > 10_000, d + ": not constant, " + distinct.size() + " distinct");
        }
    }

    @Test
    void zero_stays_zero_and_the_same_seed_gives_the_same_delays() {
        assertEquals(Duration.ZERO, RetrySchedule.jittered(Duration.ZERO, new Random(1)));
        List<Duration> schedule = List.of(Duration.ZERO, Duration.ofSeconds(5), Duration.ofMinutes(5));
        RetrySchedule a = new RetrySchedule(schedule, new Random(99));
        RetrySchedule b = new RetrySchedule(schedule, new Random(99));
        for (int made = 1; made < 3; made++) {
            assertEquals(a.after(made), b.after(made));
        }
    }

    @Test
    void the_schedule_length_is_the_number_of_attempts() {
        RetrySchedule s = new RetrySchedule(
                List.of(Duration.ZERO, Duration.ofMillis(200), Duration.ofMillis(400)), new Random(3));
        assertEquals(3, s.attempts());
        assertEquals(Duration.ZERO, s.first());
        assertTrue(s.after(1).orElseThrow().toMillis() >= 160
                && s.after(1).orElseThrow().toMillis() <= 240);
        assertTrue(s.after(2).orElseThrow().toMillis() >= 320
                && s.after(2).orElseThrow().toMillis() <= 480);
        assertTrue(s.after(3).isEmpty(), "3 attempts made: exhausted");
    }
}
