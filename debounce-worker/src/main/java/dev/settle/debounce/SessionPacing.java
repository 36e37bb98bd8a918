package dev.settle.debounce;

import dev.settle.contracts.MessageAccepted;
import dev.settle.debounce.PacingRule.Pacing;
import dev.settle.debounce.PacingRule.Step;
import dev.settle.debounce.PacingRule.Window;
import dev.settle.schema.DbTime;
import dev.settle.schema.DebounceTiming;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.stereotype.Component;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;

/**
 * The window each message arms with ({@link PacingRule}) and what the debounce worker keeps of a session's pauses:
 * {@code session_pacing} (its ring, its burst so far, the window now in effect, the latest message that changed
 * them) and {@code tenant_pacing} (the tenant's ring). Both are hints, written after the timer is armed: a session's
 * events arrive in order on one Kafka partition, so its row is a plain upsert ({@link #RECORD}, no lock read);
 * a tenant's ring takes samples from many partitions at once, so a sample is appended in one statement
 * ({@link #TENANT_APPEND}). What this reads comes with the arming's consistent read of the session
 * ({@link DebounceTimers#UNANSWERED}, {@link #observed}).
 *
 * <p>Only a change is written. A session without a row has an empty ring, a burst of one message and the base
 * window, so its first message writes nothing; a row is rewritten only when a message changes the ring, the burst
 * or the window ({@link #changes}), so a settled session of single-message bursts (a ring full of zeros) writes
 * nothing either; a sample that leaves the tenant's ring as it was read (full of that same value) is not appended.
 * The pause before a message is therefore measured from the message before it (its {@code created_at}, read with
 * the session), not from the row, which a skipped write leaves behind; the row's {@code last_message_at} is the
 * latest message that changed it, and an event no later than that (redelivered or reordered) teaches nothing.
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

    /**
     * What the arming read saw of a session.
     *
     * @param tenantId          its tenant
     * @param recorded          its row (null when none was written)
     * @param recordedWindow    the window its row holds (null when none was written)
     * @param previousMessageAt when the message before this one was accepted (null for the first)
     * @param tenantSamples     its tenant's ring
     */
    public record Observed(
            String tenantId,
            Pacing recorded,
            Window recordedWindow,
            Instant previousMessageAt,
            List<Long> tenantSamples) {

        /**
         * What the rule knows before a message accepted at {@code acceptedAt}: the recorded ring and burst (or, with
         * no row, an empty ring and a burst of one), paused since the previous message; the recorded row itself when
         * the event is not later than the latest message that changed it (the rule then teaches nothing).
         */
        Pacing before(Instant acceptedAt) {
            if (previousMessageAt == null || (recorded != null && !acceptedAt.isAfter(recorded.lastMessageAt()))) {
                return recorded;
            }
            return recorded == null
                    ? new Pacing(List.of(), previousMessageAt, 1)
                    : new Pacing(recorded.samplesMillis(), previousMessageAt, recorded.burstMessages());
        }
    }

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
        Pacing recorded = last == null
                ? null
                : new Pacing(PacingRule.parse(rs.getString("samples")), last, rs.getInt("burst_messages"));
        Long micros = rs.getObject("window_micros", Long.class);
        Window window =
                micros == null ? null : new Window(Duration.ofNanos(micros * 1_000), rs.getString("window_cause"));
        return new Observed(
                rs.getString("tenant_id"),
                recorded,
                window,
                DbTime.instant(rs, "previous_message_at"),
                PacingRule.parse(rs.getString("tenant_samples")));
    }

    /** The window this message arms with, and what it taught (recorded by {@link #record} once armed). */
    public Step next(MessageAccepted event, Observed seen) {
        if (!adaptive) {
            return new Step(seen.recorded(), null, rule.base());
        }
        boolean continuesBurst =
                event.oldestUnansweredAt() != null && event.oldestUnansweredAt().isBefore(event.acceptedAt());
        return rule.next(seen.before(event.acceptedAt()), seen.tenantSamples(), event.acceptedAt(), continuesBurst);
    }

    /** Keeps what the message changed and counts the window it armed ({@code settle.debounce.windows{window}}). */
    public void record(long sessionId, Observed seen, Step step) {
        meters.counter("settle.debounce.windows", "window", step.window().cause())
                .increment();
        if (!adaptive) {
            return;
        }
        if (changes(seen, step, rule.base())) {
            jdbc.sql(RECORD)
                    .param("sessionId", sessionId)
                    .param("samples", PacingRule.format(step.pacing().samplesMillis()))
                    .param("windowMicros", step.window().micros())
                    .param("windowCause", step.window().cause())
                    .param("lastMessageAt", DbTime.utc(step.pacing().lastMessageAt()))
                    .param("burstMessages", step.pacing().burstMessages())
                    .update();
        }
        Long sample = step.sampleMillis();
        if (sample != null && !PacingRule.append(seen.tenantSamples(), sample).equals(seen.tenantSamples())) {
            jdbc.sql(TENANT_APPEND)
                    .param("tenantId", seen.tenantId())
                    .param("sample", String.valueOf(sample))
                    .update();
        }
    }

    /**
     * Whether the step leaves the session's row other than it was read: its ring, its burst or its window (a missing
     * row reads as an empty ring, a burst of one message and the {@code base} window).
     */
    static boolean changes(Observed seen, Step step, Window base) {
        Pacing after = step.pacing();
        if (after == null) {
            return false;
        }
        Pacing recorded = seen.recorded();
        List<Long> samples = recorded == null ? List.of() : recorded.samplesMillis();
        int burst = recorded == null ? 1 : recorded.burstMessages();
        Window window = recorded == null ? base : seen.recordedWindow();
        return !after.samplesMillis().equals(samples)
                || after.burstMessages() != burst
                || !step.window().equals(window);
    }
}
