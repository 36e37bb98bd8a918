package dev.settle.schema;

/**
 * The rules of a session that several services decide in SQL, each written once. Every service composes its
 * statements from these fragments: constants joined by {@code +}, so a statement built from them stays a
 * compile-time constant next to its class. The timer rule is a function of its operands instead, because the
 * debounce worker applies it to an event's bound times and the agent to a session row's columns.
 *
 * <p>Alias convention: a fragment reads {@code chat_session} under the alias {@code s}; a statement that uses one
 * names the session table {@code s} ({@code FROM chat_session s}, {@code UPDATE chat_session s},
 * {@code JOIN chat_session s}). Fragments never read another table under a name of the statement's: what else a
 * rule needs it reads in a subquery of its own. A {@code ?} in a fragment is a parameter, in the place the fragment
 * takes in the statement.
 *
 * <p>The timer fragments ({@link #TIMER_CAUSE}) read {@code debounce_timer} under the alias {@code d} in the same
 * way.
 *
 * <p>Every time is judged on the database clock ({@code UTC_TIMESTAMP(6)}), which is one value for the whole
 * statement.
 */
public final class SessionRules {
    private SessionRules() {}

    // ---- the lease ---------------------------------------------------------------------------------------------

    /**
     * The one comparison of lease time: a lease is live while {@code lease_expires_at} is after now, and expired
     * from the instant {@code lease_expires_at} itself. Everything below is built on it, so a holder's fenced write
     * and a claimer's takeover never both succeed at the boundary.
     */
    public static final String LEASE_UNEXPIRED = "(s.lease_expires_at > UTC_TIMESTAMP(6))";

    /**
     * Someone holds a live lease. {@code lease_token} and {@code lease_expires_at} are set together (claim) and
     * cleared together (release).
     */
    public static final String LEASE_LIVE = "(s.lease_token IS NOT NULL AND " + LEASE_UNEXPIRED + ")";

    /** Nobody holds a live lease: none was claimed, it was released, or it expired. The inverse of {@link #LEASE_LIVE}. */
    public static final String LEASE_FREE = "(NOT " + LEASE_LIVE + ")";

    /** A lease was claimed and expired without being released: its holder died or paused past its TTL. */
    public static final String LEASE_EXPIRED = "(s.lease_token IS NOT NULL AND NOT " + LEASE_UNEXPIRED + ")";

    /** The live lease is the one with the token bound at the {@code ?}: the fence of every write of a holder. */
    public static final String LEASE_OURS = "(s.lease_token = ? AND " + LEASE_UNEXPIRED + ")";

    // ---- work --------------------------------------------------------------------------------------------------

    /** Some user message is not covered by a committed reply. */
    public static final String UNANSWERED = "s.version > s.replied_version";

    /**
     * The session has work for a turn: unanswered messages, and the last turn did not fail at this version (a
     * failed version waits for a new message or an operator's retry, never for an automatic one).
     */
    public static final String HAS_WORK = "(" + UNANSWERED + " AND s.version > s.failed_version)";

    /** The inverse case of {@link #HAS_WORK} that still has unanswered messages: the last turn failed at this version. */
    public static final String FAILED_AT_VERSION = "(" + UNANSWERED + " AND s.failed_version >= s.version)";

    // ---- the double-texting policy -----------------------------------------------------------------------------

    /**
     * The policy in force for the session: its own, else its tenant's default, else the deployment's default
     * (bound at the {@code ?}). Reads the tenant in its own subquery (alias {@code st}), so a statement needs no
     * join for it.
     */
    public static final String EFFECTIVE_POLICY =
            "COALESCE(s.policy, (SELECT st.default_policy FROM tenant st WHERE st.id = s.tenant_id), ?)";

    // ---- the debounce timer ------------------------------------------------------------------------------------

    /**
     * When a session's timer must fire at the latest: {@code max-wait} after its oldest unanswered message. The
     * operands are SQL expressions: the debounce worker binds the event's times, the agent reads the row's.
     *
     * @param oldestAt      DATETIME(6) of the oldest unanswered message
     * @param maxwaitMicros max-wait in microseconds ({@link DebounceTiming#maxwaitMicros()})
     */
    public static String timerDeadline(String oldestAt, String maxwaitMicros) {
        return "(" + oldestAt + " + INTERVAL " + maxwaitMicros + " MICROSECOND)";
    }

    /**
     * When a session's timer fires: {@code window} after its last message, never later than its deadline
     * ({@link #timerDeadline}): {@code LEAST(last + window, oldest + max-wait)}.
     *
     * @param lastAt       DATETIME(6) of the latest message
     * @param windowMicros the window in microseconds ({@link DebounceTiming#windowMicros()})
     */
    public static String timerFireAt(String lastAt, String oldestAt, String windowMicros, String maxwaitMicros) {
        return "LEAST(" + lastAt + " + INTERVAL " + windowMicros + " MICROSECOND, "
                + timerDeadline(oldestAt, maxwaitMicros) + ")";
    }

    /**
     * Why a timer row fires when it does: {@code sweeper} if the sweeper armed it, {@code maxwait} if fire_at
     * reached deadline_at, {@code typing} if a typing signal's hold ({@code held_until}) is at or past what the
     * messages alone would give ({@code window_fire_at}, NULL on a row never held), else {@code window}. The
     * firer sends it as SessionReady's cause; the session view shows it for an armed timer.
     */
    public static final String TIMER_CAUSE = """
            CASE WHEN d.armed_by = 'sweeper' THEN 'sweeper'
                 WHEN d.fire_at >= d.deadline_at THEN 'maxwait'
                 WHEN d.held_until >= COALESCE(d.window_fire_at, d.fire_at) THEN 'typing'
                 ELSE 'window' END""";
}
