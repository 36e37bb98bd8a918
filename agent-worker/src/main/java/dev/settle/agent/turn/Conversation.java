package dev.settle.agent.turn;

import dev.settle.agent.AgentSettings;
import dev.settle.agent.lease.SessionLease;
import dev.settle.agent.tools.ToolExecutions;
import dev.settle.agent.webhook.Outbox;
import dev.settle.schema.DbTime;
import dev.settle.schema.SessionRules;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;

/**
 * What a turn answers and what the model may see: the unanswered span (replied_version, version] of the
 * session as the lease holder reads it, and the committed history before it. Only committed rows exist in
 * chat_message, and only finished tool pairs are read, so the model's context is clean by construction
 * (the "clean model context" promise, docs/PROMISES.md).
 *
 * <p>Under the {@code enqueue} policy the span stops at the end of the first unanswered burst: the lowest
 * {@code session_burst} end above replied_version (written by the debounce worker as each timer fires), or the
 * version of the SessionReady that woke this turn when its burst end is not committed yet. Bursts that piled up
 * while a long turn ran therefore get a reply each, in order, instead of one reply for all of them.
 */
@Component
public class Conversation {
    /** The message columns of {@link #READ}: what {@link Message} is made of. */
    private static final String MESSAGE_COLUMNS =
            "m.message_uid, m.role, m.text, m.version, m.covers_from, m.covers_version";

    /** {@link #READ}'s session columns, null in the rows of messages. */
    private static final String NO_SESSION =
            "NULL AS enqueue, NULL AS s_version, NULL AS replied_version, NULL AS oldest_unanswered_at, "
                    + "NULL AS external_id, NULL AS webhook_url, NULL AS abandoned, NULL AS burst_end, NULL AS tools";

    /** A message part of {@link #READ}: the session joined for its lease and versions (parameters: session, token). */
    private static String messages(int part, String where, String order) {
        return "(SELECT " + part + " AS part, " + MESSAGE_COLUMNS + ", " + NO_SESSION
                + " FROM chat_message m JOIN chat_session s ON s.id = m.session_id"
                + " WHERE s.id = ? AND s.lease_token = ? AND m.session_id = s.id AND " + where + order + ")";
    }

    /**
     * Everything a turn reads, in one statement (one consistent read):
     * <ul>
     *   <li>part -1, the session: its versions, plus what the turn needs later without another round trip — the
     *       client-facing id and the tenant's webhook URL (for the outbox row), whether an earlier holder left a
     *       turn RUNNING (only then does {@link Turns#begin} close abandoned turns), the lowest burst end above the
     *       replied version and whether the session has tool executions;</li>
     *   <li>part 0, the unanswered user messages, every one of them (the history limit never cuts them);</li>
     *   <li>parts 1 and 2, the history: the newest {@code historyLimit} committed messages before the span, in
     *       conversation order (a reply right after the last message it covers) — at most that many answered user
     *       messages by version (1), and at most that many replies by the last version they cover (2), merged.
     *       Unanswered messages are not in it, so no number of replies committed after one of them can push it out
     *       of the prompt.</li>
     * </ul>
     * Every part requires the caller's lease token: a holder that lost its lease reads nothing.
     */
    static final String READ = "(SELECT -1 AS part, NULL AS message_uid, NULL AS role, NULL AS text, NULL AS version, "
            + "NULL AS covers_from, NULL AS covers_version, " + SessionRules.EFFECTIVE_POLICY
            + " = 'enqueue' AS enqueue, "
            + """
            s.version AS s_version, s.replied_version, s.oldest_unanswered_at, s.external_id, t.webhook_url,
                   EXISTS (SELECT 1 FROM chat_turn r WHERE r.session_id = s.id AND r.state = 'RUNNING') AS abandoned,
                   (SELECT MIN(b.end_version) FROM session_burst b
                     WHERE b.session_id = s.id AND b.end_version > s.replied_version) AS burst_end,
                   EXISTS (SELECT 1 FROM tool_execution x WHERE x.session_id = s.id) AS tools
              FROM chat_session s LEFT JOIN tenant t ON t.id = s.tenant_id
             WHERE s.id = ? AND s.lease_token = ?)
            UNION ALL
""" + messages(0, "m.version > s.replied_version AND m.version <= s.version", "")
            + "\nUNION ALL\n" + messages(1, "m.version <= s.replied_version", " ORDER BY m.version DESC LIMIT ?")
            + "\nUNION ALL\n"
            + messages(2, "m.covers_version <= s.replied_version", " ORDER BY m.covers_version DESC LIMIT ?");

    /** A committed message; for a reply, {@code version} is the last version it covers and {@code coversFrom} the first. */
    public record Message(String uid, String role, String text, long version, long coversFrom) {}

    /**
     * @param fromVersion first unanswered version (replied_version + 1)
     * @param toVersion   the session version this turn answers
     * @param history     committed messages before the span, oldest first
     * @param pending     the unanswered user messages, in version order
     * @param toolPairs   finished tool call/result pairs of the spans in view (COMPLETED or FAILED only)
     * @param target      where the turn's webhook goes (null: the outbox looks it up)
     * @param abandoned   a turn of this session was RUNNING when the lease was claimed (its holder died)
     * @param bursts      burst ends are recorded above the replied version (the reply spends them)
     */
    public record Snapshot(
            long sessionId,
            long fromVersion,
            long toVersion,
            Instant oldestUnansweredAt,
            List<Message> history,
            List<Message> pending,
            List<ToolExecutions.Execution> toolPairs,
            Outbox.Target target,
            boolean abandoned,
            boolean bursts) {
        public List<String> pendingIds() {
            return pending.stream().map(Message::uid).toList();
        }

        /** What this turn's webhook delivery covers. */
        public Outbox.Span outboxSpan() {
            return new Outbox.Span(sessionId, toVersion, pendingIds(), target);
        }
    }

    private final JdbcTemplate jdbc;
    private final ToolExecutions executions;
    private final int historyLimit;
    private final String defaultPolicy;

    public Conversation(JdbcTemplate jdbc, ToolExecutions executions, AgentSettings settings) {
        this.jdbc = jdbc;
        this.executions = executions;
        this.historyLimit = settings.agent().historyLimit();
        this.defaultPolicy = settings.policy().defaultPolicy();
    }

    /** The whole unanswered span, whatever the policy (no SessionReady in hand). */
    public Snapshot load(SessionLease.Lease lease) {
        return load(lease, Long.MAX_VALUE);
    }

    /**
     * @param readyVersion the version of the SessionReady that woke this turn ({@link Long#MAX_VALUE}: none);
     *                     under {@code enqueue} the span ends there if no burst end is recorded below it
     * @return the snapshot, or null when the lease is gone or nothing is unanswered
     */
    public Snapshot load(SessionLease.Lease lease, long readyVersion) {
        record Head(
                long version,
                long replied,
                Instant oldest,
                Outbox.Target target,
                boolean abandoned,
                boolean enqueue,
                Long burstEnd,
                boolean tools) {}
        List<Head> heads = new ArrayList<>(1);
        List<Message> unanswered = new ArrayList<>();
        List<Message> earlier = new ArrayList<>();
        jdbc.query(
                READ,
                rs -> {
                    int part = rs.getInt("part");
                    if (part < 0) {
                        heads.add(new Head(
                                rs.getLong("s_version"),
                                rs.getLong("replied_version"),
                                DbTime.instant(rs, "oldest_unanswered_at"),
                                new Outbox.Target(rs.getString("external_id"), rs.getString("webhook_url")),
                                rs.getBoolean("abandoned"),
                                rs.getBoolean("enqueue"),
                                rs.getObject("burst_end", Long.class),
                                rs.getBoolean("tools")));
                        return;
                    }
                    String role = rs.getString("role");
                    (part == 0 ? unanswered : earlier)
                            .add(new Message(
                                    rs.getString("message_uid"),
                                    role,
                                    rs.getString("text"),
                                    "user".equals(role) ? rs.getLong("version") : rs.getLong("covers_version"),
                                    rs.getLong("covers_from")));
                },
                defaultPolicy,
                lease.sessionId(),
                lease.token(),
                lease.sessionId(),
                lease.token(),
                lease.sessionId(),
                lease.token(),
                historyLimit,
                lease.sessionId(),
                lease.token(),
                historyLimit);
        if (heads.isEmpty() || heads.getFirst().version() <= heads.getFirst().replied()) {
            return null;
        }
        Head head = heads.getFirst();
        long toVersion = head.version();
        if (head.enqueue()) {
            long end = head.burstEnd() == null ? Long.MAX_VALUE : head.burstEnd();
            if (readyVersion > head.replied()) {
                end = Math.min(end, readyVersion);
            }
            toVersion = Math.min(toVersion, end);
        }
        long span = toVersion;
        List<Message> pending = unanswered.stream()
                .filter(m -> m.version() <= span)
                .sorted(Comparator.comparingLong(Message::version))
                .toList();
        if (pending.size() != toVersion - head.replied()) {
            throw new IllegalStateException("session " + lease.sessionId() + " expected " + (toVersion - head.replied())
                    + " unanswered messages, found " + pending.size());
        }
        List<Message> history = earlier;
        // a reply sits right after the last user message it covers
        history.sort(Comparator.comparingLong((Message m) -> m.version() * 2 + ("user".equals(m.role()) ? 0 : 1)));
        history = List.copyOf(history.subList(Math.max(0, history.size() - historyLimit), history.size()));
        long oldestInView = head.replied() + 1;
        for (Message m : history) {
            oldestInView = Math.min(oldestInView, "user".equals(m.role()) ? m.version() : m.coversFrom());
        }
        List<ToolExecutions.Execution> pairs =
                head.tools() ? executions.completedPairs(lease.sessionId(), oldestInView) : List.of();
        return new Snapshot(
                lease.sessionId(),
                head.replied() + 1,
                toVersion,
                head.oldest(),
                history,
                pending,
                pairs,
                head.target(),
                head.abandoned(),
                head.burstEnd() != null);
    }
}
