package dev.settle.agent.webhook;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;

/**
 * What an attempt's result means for its delivery. Only a 2xx within the timeout is success.
 *
 * <ol>
 *   <li>2xx → {@link Delivered}.</li>
 *   <li>The dispatcher stopped mid-attempt → {@link Released}: the claim is handed back, due at once.</li>
 *   <li>410 Gone → {@link Failed} and the endpoint is disabled.</li>
 *   <li>Response header {@code webhook-delivery: abort-message} → {@link Failed} (aborted by the receiver).</li>
 *   <li>Schedule exhausted → {@link Failed}.</li>
 *   <li>Otherwise (5xx, 4xx, 3xx, timeout, connection error, refused by the SSRF guard) → {@link Retry} after the
 *       schedule's next delay; on 429 and 503 a readable {@code Retry-After} replaces that delay (capped).</li>
 * </ol>
 */
public sealed interface AttemptVerdict {
    /** {@code webhook-delivery} header value by which a receiver stops all retries of this message. */
    String ABORT_MESSAGE = "abort-message";

    record Delivered(int status) implements AttemptVerdict {}

    record Retry(Duration delay, Integer status, String error) implements AttemptVerdict {}

    record Failed(Integer status, String error, boolean disableEndpoint) implements AttemptVerdict {}

    record Released(String error) implements AttemptVerdict {}

    /**
     * @param attemptsMade attempts made in this round, this one included
     * @param now          the reference for a Retry-After HTTP-date when the response has no Date header
     */
    static AttemptVerdict of(
            WebhookSender.Result r, int attemptsMade, RetrySchedule schedule, Duration maxRetryAfter, Instant now) {
        if (r.ok()) {
            return new Delivered(r.status());
        }
        if (r.interrupted()) {
            return new Released(r.error());
        }
        String error = describe(r);
        if (r.status() != null && r.status() == 410) {
            return new Failed(
                    410,
                    "endpoint gone: HTTP 410, endpoint disabled; no delivery is attempted to it "
                            + "until an operator retry is acknowledged",
                    true);
        }
        if (r.deliveryDirective() != null && r.deliveryDirective().trim().equalsIgnoreCase(ABORT_MESSAGE)) {
            return new Failed(
                    r.status(), "aborted by receiver (webhook-delivery: abort-message) after " + error, false);
        }
        Optional<Duration> next = schedule.after(attemptsMade);
        if (next.isEmpty()) {
            return new Failed(
                    r.status(),
                    "exhausted: " + attemptsMade + " attempt" + (attemptsMade == 1 ? "" : "s")
                            + " failed, the last with " + error,
                    false);
        }
        Duration delay = next.get();
        if (r.status() != null && (r.status() == 429 || r.status() == 503)) {
            Optional<Duration> asked = RetryAfter.parse(r.retryAfter(), r.date(), now, maxRetryAfter);
            if (asked.isPresent()) {
                delay = asked.get();
                error = error + " (Retry-After: " + r.retryAfter().trim() + ")";
            }
        }
        return new Retry(delay, r.status(), error);
    }

    /** The attempt's own error text: "HTTP 500", "HTTP 302 (redirects are not followed; ...)", a timeout... */
    static String describe(WebhookSender.Result r) {
        if (r.status() == null) {
            return r.error();
        }
        if (r.status() >= 300 && r.status() < 400) {
            return "HTTP " + r.status() + " (redirects are not followed"
                    + (r.location() == null ? ")" : "; Location: " + r.location() + ")");
        }
        return "HTTP " + r.status();
    }
}
