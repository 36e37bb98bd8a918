package dev.settle.agent.webhook;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** Retry-After as delta-seconds or HTTP-date (against the response's Date header), capped. */
class WebhookRetryAfterTest {
    static final Instant NOW = Instant.parse("2026-03-01T12:00:00Z");
    static final Duration CAP = Duration.ofHours(1);

    @Test
    void delta_seconds() {
        assertEquals(Optional.of(Duration.ofSeconds(120)), RetryAfter.parse("120", null, NOW, CAP));
        assertEquals(Optional.of(Duration.ZERO), RetryAfter.parse(" 0 ", null, NOW, CAP));
        assertEquals(Optional.of(CAP), RetryAfter.parse("86400", null, NOW, CAP));
        assertEquals(Optional.of(CAP), RetryAfter.parse("99999999999999999999", null, NOW, CAP));
    }

    @Test
    void http_date_against_the_date_header_or_now() {
        assertEquals(
                Optional.of(Duration.ofSeconds(90)), RetryAfter.parse("Sun, 01 Mar 2026 12:01:30 GMT", null, NOW, CAP));
        // the receiver's clock is 10 minutes behind ours: its Date header is the reference, not our clock
        assertEquals(
                Optional.of(Duration.ofSeconds(30)),
                RetryAfter.parse("Sun, 01 Mar 2026 11:50:30 GMT", "Sun, 01 Mar 2026 11:50:00 GMT", NOW, CAP));
        assertEquals(Optional.of(Duration.ZERO), RetryAfter.parse("Sun, 01 Mar 2026 11:00:00 GMT", null, NOW, CAP));
        assertEquals(Optional.of(CAP), RetryAfter.parse("Mon, 02 Mar 2026 12:00:00 GMT", null, NOW, CAP));
    }

    @Test
    void absent_or_unreadable_leaves_it_to_the_schedule() {
        assertEquals(Optional.empty(), RetryAfter.parse(null, null, NOW, CAP));
        assertEquals(Optional.empty(), RetryAfter.parse("", null, NOW, CAP));
        assertEquals(Optional.empty(), RetryAfter.parse("soon", null, NOW, CAP));
        assertEquals(Optional.empty(), RetryAfter.parse("-5", null, NOW, CAP));
        assertEquals(Optional.empty(), RetryAfter.parse("1.5", null, NOW, CAP));
    }
}
