package dev.settle.ingest.accept;

import dev.settle.schema.DbTime;
import dev.settle.schema.SessionRules;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.time.Instant;
import java.util.List;

/**
 * A client's "the user is typing" ({@code POST /v1/sessions/{id}/typing}): a hint for the debounce worker, never
 * stored. One plain indexed read, outside any transaction and without a lock ({@link #SESSION}), finds the session
 * in the caller's tenant and reads the database clock; a session with unanswered messages gets a
 * {@code TypingSignal} queued for the broker ({@link AcceptedEventPublisher}), anything else (no such session in
 * this tenant, nothing unanswered) gets nothing. The caller is answered the same either way, so a signal tells it
 * nothing about other sessions. No session is created, and the signal is not written to the session's event log.
 *
 * <p>Counted as {@code settle.typing.signals{outcome}}: {@code queued} here, {@code ignored} when there was nothing
 * to hold; the publisher counts {@code dropped} and {@code failed}.
 */
@Component
public class TypingSignals {
    /** Parameters: tenant, external id. */
    static final String SESSION = "SELECT s.id, " + SessionRules.UNANSWERED + " AS unanswered, "
            + "UTC_TIMESTAMP(6) AS signal_at FROM chat_session s WHERE s.tenant_id = ? AND s.external_id = ?";

    private record Found(long sessionPk, boolean unanswered, Instant signalAt) {}

    private final JdbcTemplate jdbc;
    private final AcceptedEventPublisher publisher;
    private final MeterRegistry meters;

    public TypingSignals(JdbcTemplate jdbc, AcceptedEventPublisher publisher, MeterRegistry meters) {
        this.jdbc = jdbc;
        this.publisher = publisher;
        this.meters = meters;
    }

    /** Queues the signal when the session exists in {@code tenant} and has unanswered messages; returns at once. */
    public void signal(String tenant, String sessionId) {
        List<Found> found = jdbc.query(
                SESSION,
                (rs, i) -> new Found(rs.getLong("id"), rs.getBoolean("unanswered"), DbTime.instant(rs, "signal_at")),
                tenant,
                sessionId);
        if (found.isEmpty() || !found.getFirst().unanswered()) {
            meters.counter(AcceptedEventPublisher.TYPING_METRIC, "outcome", "ignored")
                    .increment();
            return;
        }
        publisher.publishTyping(found.getFirst().sessionPk(), found.getFirst().signalAt());
    }
}
