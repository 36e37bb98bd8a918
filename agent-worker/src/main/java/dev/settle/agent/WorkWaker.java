package dev.settle.agent;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;


/**
 * After a holder releases its lease, messages may still be waiting (a turn was superseded, or committed
 * past max-wait while the user kept typing), and their timer may have fired while the lease was busy. This
 * arms the session's timer again from the conversation's own times — window after the last message, never
 * past the oldest unanswered message's max-wait deadline — unless a timer is already armed.
 */
@Component
public class WorkWaker {
    static final String REARM = """
            INSERT INTO debounce_timer (session_id, fire_at, deadline_at, armed_version, armed_by, armed_at)
            SELECT id,
                   LEAST(last_message_at + INTERVAL ? MICROSECOND, oldest_unanswered_at + INTERVAL ? MICROSECOND),
                   oldest_unanswered_at + INTERVAL ? MICROSECOND,
                   version, 'agent', UTC_TIMESTAMP(6)
              FROM chat_session
             WHERE id = ? AND version > replied_version AND version > failed_version
               AND oldest_unanswered_at IS NOT NULL
            ON DUPLICATE KEY UPDATE session_id = debounce_timer.session_id""";

    private final JdbcTemplate jdbc;
    private final long windowMicros;
    private final long maxWaitMicros;

    public WorkWaker(JdbcTemplate jdbc, AgentSettings settings) {
        this.jdbc = jdbc;
        this.windowMicros = SessionLease.micros(settings.debounce().window());
        this.maxWaitMicros = SessionLease.micros(settings.debounce().maxwait());
    }

    public void rearmIfPending(long sessionId) {
        jdbc.update(REARM, windowMicros, maxWaitMicros, maxWaitMicros, sessionId);
    }

}
