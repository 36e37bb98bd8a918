package dev.settle.debounce;

import dev.settle.contracts.MessageAccepted;
import dev.settle.debounce.PacingRule.Pacing;
import dev.settle.debounce.PacingRule.Step;
import dev.settle.schema.DbTime;
import dev.settle.schema.DebounceTiming;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Instant;
import java.util.List;

/**
 * The window each message arms with ({@link PacingRule}) and what the debounce worker keeps of a session's pauses:
 * {@code session_pacing} (its ring, its previous message, its burst so far, the window now in effect) and
 * {@code tenant_pacing} (the tenant's ring). Both are hints, written after the timer is armed: a session's
 * events arrive in order on one Kafka partition, so its row is a plain upsert ({@link #RECORD}, no lock read);
 * a tenant's ring takes samples from many partitions at once, so a sample is appended in one statement
 * ({@link #TENANT_APPEND}). What this reads comes with the arming's consistent read of the session
 * ({@link DebounceTimers#UNANSWERED}, {@link #observed}).
 *
 * <p>With {@code settle.debounce.adaptive=false} every message arms with the base window and nothing is read
 * from or written to either table.
 */
@Component
public class SessionPacing {
    static final String RECORD = """
            INSERT INTO session_pacing (session_id, samples, window_micros, window_cause, last_message_at,
                                        burst_messages, updated_at)
            VALUES (:sessionId, :samples, :windowMicros, :windowCause, CAST(:lastMessageAt AS DATETIME(6)),
                    :burstMessages, UTC_TIMESTAMP(6))
            ON DUPLICATE KEY UPDATE
              samples         = :samples,
              window_micros   = :windowMicros,
              window_cause    = :windowCause,
              last_message_at = CAST(:lastMessageAt AS DATETIME(6)),
              burst_messages  = :burstMessages,
              updated_at      = UTC_TIMESTAMP(6)
            """;

    /** Appends one sample to the tenant's ring, keeping the last {@link PacingRule#SAMPLES}. */
    static final String TENANT_APPEND = """
            INSERT INTO tenant_pacing (tenant_id, samples, updated_at)
            VALUES (:tenantId, :sample, UTC_TIMESTAMP(6))
            ON DUPLICATE KEY UPDATE
              samples    = SUBSTRING_INDEX(CONCAT(tenant_pacing.samples, ',', :sample), ',', -%d),
              updated_at = UTC_TIMESTAMP(6)
            """.formatted(PacingRule.SAMPLES);

    /** What the arming read saw of a session: its tenant, its pacing (null before the first), its tenant's ring. */
    public record Observed(String tenantId, Pacing pacing, List<Long> tenantSamples) {}

    private final JdbcClient jdbc;
    private final MeterRegistry meters;
    private final boolean adaptive;
    private final PacingRule rule;

    public SessionPacing(JdbcClient jdbc, DebounceTiming timing, PacingSettings settings, MeterRegistry meters) {
        this.jdbc = jdbc;
        this.meters = meters;
        this.adaptive = settings.adaptive();
        this.rule = new PacingRule(timing.window(), settings.maxwindow(timing));
    }

    /** Reads the columns {@link DebounceTimers#UNANSWERED} selects for the rule. */
    static Observed observed(ResultSet rs) throws SQLException {
        Instant last = DbTime.instant(rs, "last_message_at");
        Pacing pacing = last == null
                ? null
                : new Pacing(PacingRule.parse(rs.getString("samples")), last, rs.getInt("burst_messages"));
        return new Observed(rs.getString("tenant_id"), pacing, PacingRule.parse(rs.getString("tenant_samples")));
    }

    /** The window this message arms with, and what it taught (recorded by {@link #record} once armed). */
    public Step next(MessageAccepted event, Observed seen) {
        if (!adaptive) {
            return new Step(seen.pacing(), null, rule.base());
        }
        boolean continuesBurst =
                event.oldestUnansweredAt() != null && event.oldestUnansweredAt().isBefore(event.acceptedAt());
        return rule.next(seen.pacing(), seen.tenantSamples(), event.acceptedAt(), continuesBurst);
    }

    /** Keeps what the message taught and counts the window it armed ({@code settle.debounce.windows{window}}). */
    public void record(long sessionId, Observed seen, Step step) {
        meters.counter("settle.debounce.windows", "window", step.window().cause())
                .increment();
        if (!adaptive || step.pacing() == seen.pacing()) {
            return;
        }
        jdbc.sql(RECORD)
                .param("sessionId", sessionId)
                .param("samples", PacingRule.format(step.pacing().samplesMillis()))
                .param("windowMicros", step.window().micros())
                .param("windowCause", step.window().cause())
                .param("lastMessageAt", DbTime.utc(step.pacing().lastMessageAt()))
                .param("burstMessages", step.pacing().burstMessages())
                .update();
        if (step.sampleMillis() != null) {
            jdbc.sql(TENANT_APPEND)
                    .param("tenantId", seen.tenantId())
                    .param("sample", String.valueOf(step.sampleMillis()))
                    .update();
        }
    }
}
