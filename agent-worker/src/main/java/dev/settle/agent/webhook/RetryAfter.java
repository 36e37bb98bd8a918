package dev.settle.agent.webhook;

import java.time.Duration;
import java.time.Instant;
import java.time.ZonedDateTime;
import java.time.format.DateTimeFormatter;
import java.time.format.DateTimeParseException;
import java.util.Optional;

/**
 * A receiver's {@code Retry-After} (RFC 9110 §10.2.3) as a delay: delta-seconds, or an HTTP-date. An HTTP-date
 * is measured against the response's own {@code Date} header when there is one (so neither our clock nor the
 * receiver's has to be right), else against {@code now}. The delay is capped (settle.webhook.max-retry-after,
 * default 1 h) so that a receiver cannot park a delivery for days; a date in the past means "now".
 */
final class RetryAfter {
    private RetryAfter() {}

    /** @return the delay, or empty when the header is absent or unreadable (then the schedule decides) */
    static Optional<Duration> parse(String value, String dateHeader, Instant now, Duration cap) {
        if (value == null || value.isBlank()) {
            return Optional.empty();
        }
        String v = value.trim();
        Duration delay;
        if (v.chars().allMatch(Character::isDigit)) {
            delay = v.length() > 12 ? cap : Duration.ofSeconds(Long.parseLong(v));
        } else {
            Instant at = httpDate(v);
            if (at == null) {
                return Optional.empty();
            }
            Instant reference = dateHeader == null ? null : httpDate(dateHeader.trim());
            delay = Duration.between(reference != null ? reference : now, at);
            if (delay.isNegative()) {
                delay = Duration.ZERO;
            }
        }
        return Optional.of(delay.compareTo(cap) > 0 ? cap : delay);
    }

    private static Instant httpDate(String v) {
        try {
            return ZonedDateTime.parse(v, DateTimeFormatter.RFC_1123_DATE_TIME).toInstant();
        } catch (DateTimeParseException e) {
            return null;
        }
    }
}
