package dev.settle.agent;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.time.Duration;
import java.util.UUID;

/**
 * The session lease: at most one live holder per session, fenced by a token and an epoch, timed by the
 * database clock.
 *
 * <ol>
 *   <li>Claim: one CAS UPDATE ({@link #CLAIM}) that succeeds only if nobody holds a live lease and there is
 *       work (unanswered, not failed at this version). A new random token and epoch + 1 make every later write
 *       of a previous holder fail. Affected rows 1 = ours, 0 = busy or nothing to do (normal). The new epoch
 *       comes back in the statement's OK packet ({@code LAST_INSERT_ID(expr)}, {@link dev.settle.schema.OkPacket}), so a
 *       claim is one round trip; {@link #EPOCH} is the fallback for a driver that does not hand it back.</li>
 *   <li>Heartbeat ({@link #HEARTBEAT}) renews only a lease that is still ours <em>and still live</em>: a holder
 *       paused past its TTL is dead even if nobody took over yet.</li>
 *   <li>Release ({@link #RELEASE}) clears only our own token.</li>
 * </ol>
 */
@Component
public class SessionLease {
    private static final Logger log = LoggerFactory.getLogger(SessionLease.class);

    /**
     * The OK packet's last insert id is {@code 2 × new epoch + 1} when the claim replaced an expired holder's
     * lease (a takeover), {@code 2 × new epoch} when the lease was free. lease_epoch is assigned before
     * lease_token, so it reads the previous token (MySQL and MariaDB assign left to right; under MariaDB's
     * SIMULTANEOUS_ASSIGNMENT every assignment reads the old row, which gives the same result).
     */
    static final String CLAIM = """
            UPDATE chat_session
               SET lease_epoch = LAST_INSERT_ID((lease_epoch + 1) * 2 + (lease_token IS NOT NULL)) DIV 2,
                   lease_token = ?,
                   lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
             WHERE id = ?
               AND (lease_token IS NULL OR lease_expires_at < UTC_TIMESTAMP(6))
               AND version > replied_version
               AND version > failed_version""";

    static final String EPOCH = "SELECT lease_epoch FROM chat_session WHERE id = ? AND lease_token = ?";

    static final String HEARTBEAT = """
            UPDATE chat_session
               SET lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
             WHERE id = ? AND lease_token = ? AND lease_expires_at >= UTC_TIMESTAMP(6)""";

    /**
     * Renews every lease a worker holds in one statement per 500 ({@code id} finds the rows; a token matches
     * only its own claim). Expired leases are not revived: their holders are dead.
     */
    static final String RENEW_ALL = """
            UPDATE chat_session
               SET lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
             WHERE id IN (%s) AND lease_token IN (%s) AND lease_expires_at >= UTC_TIMESTAMP(6)""";

    static final String LIVE = """
            SELECT lease_token FROM chat_session
             WHERE id IN (%s) AND lease_token IN (%s) AND lease_expires_at >= UTC_TIMESTAMP(6)""";

    /**
     * Lock order: a transaction that writes under a lease locks the session row exclusively <em>first</em>.
     * A statement that joins chat_session takes a shared lock on the row; upgrading it later in the same
     * transaction (an event append bumps event_seq) deadlocks with any renewal queued on that row, and InnoDB
     * may pick the turn as the victim. Found by CI: {@code Turns.begin} against {@link #RENEW_ALL}.
     */
    static final String LOCK_HELD = """
            SELECT id FROM chat_session
             WHERE id = ? AND lease_token = ? AND lease_expires_at >= UTC_TIMESTAMP(6) FOR UPDATE""";

    static final String RELEASE = """
            UPDATE chat_session SET lease_token = NULL, lease_expires_at = NULL
             WHERE id = ? AND lease_token = ?""";

    /**
     * A claimed lease; every write made under it carries {@code token}. {@code takeover}: it replaced an expired
     * holder's lease (false when unknown, see {@link #EPOCH}).
     */
    public record Lease(long sessionId, String token, long epoch, boolean takeover) {
        public Lease(long sessionId, String token, long epoch) {
            this(sessionId, token, epoch, false);
        }
    }

    private final JdbcTemplate jdbc;
    private final Duration ttl;

    public SessionLease(JdbcTemplate jdbc, AgentSettings settings) {
        this.jdbc = jdbc;
        this.ttl = settings.lease().ttl();
    }

    /** @return the lease, or null when the session is busy or has nothing to answer */
    public Lease claim(long sessionId) {
        String token = UUID.randomUUID().toString();
        dev.settle.schema.OkPacket.Reserved claimed = dev.settle.schema.OkPacket.update(jdbc, CLAIM, token, micros(ttl), sessionId);
        if (claimed.rows() == 0) {
            log.debug("session {} busy or nothing to answer", sessionId);
            return null;
        }
        expectOne(claimed.rows(), "claim");
        long id = claimed.lastInsertId();
        return id > 0 ? new Lease(sessionId, token, id / 2, id % 2 == 1)
                : new Lease(sessionId, token, jdbc.queryForObject(EPOCH, Long.class, sessionId, token));
    }

    /**
     * Inside the caller's transaction: locks the session row exclusively while {@code lease} is live
     * ({@link #LOCK_HELD}); until commit no renewal, takeover or message can interleave.
     *
     * @return false when the lease is lost (nothing locked)
     */
    public boolean lockHeld(Lease lease) {
        return !jdbc.queryForList(LOCK_HELD, Long.class, lease.sessionId(), lease.token()).isEmpty();
    }

    /** @return false when the lease is lost: the holder must stop and write nothing more */
    public boolean heartbeat(Lease lease) {
        int rows = jdbc.update(HEARTBEAT, micros(ttl), lease.sessionId(), lease.token());
        expectAtMostOne(rows, "heartbeat");
        return rows == 1;
    }

    /**
     * Renews {@code held} through {@code via} (the heartbeat's own connection pool, so turns queueing for
     * connections cannot starve the renewals) and returns the tokens that are still live.
     */
    public java.util.Set<String> renewAll(JdbcTemplate via, java.util.List<Lease> held) {
        java.util.Set<String> live = new java.util.HashSet<>();
        for (int from = 0; from < held.size(); from += 500) {
            java.util.List<Lease> part = held.subList(from, Math.min(held.size(), from + 500));
            String marks = String.join(",", java.util.Collections.nCopies(part.size(), "?"));
            java.util.List<Object> args = new java.util.ArrayList<>();
            part.forEach(l -> args.add(l.sessionId()));
            part.forEach(l -> args.add(l.token()));
            java.util.List<Object> renewArgs = new java.util.ArrayList<>();
            renewArgs.add(micros(ttl));
            renewArgs.addAll(args);
            int rows = via.update(RENEW_ALL.formatted(marks, marks), renewArgs.toArray());
            if (rows == part.size()) {
                part.forEach(l -> live.add(l.token()));
            } else {
                live.addAll(via.queryForList(LIVE.formatted(marks, marks), String.class, args.toArray()));
            }
        }
        return live;
    }

    public void release(Lease lease) {
        int rows = jdbc.update(RELEASE, lease.sessionId(), lease.token());
        expectAtMostOne(rows, "release");
    }

    static long micros(Duration d) {
        return d.toNanos() / 1000;
    }

    private static void expectOne(int rows, String what) {
        if (rows != 1) {
            throw new IllegalStateException(what + " touched " + rows + " rows");
        }
    }

    static void expectAtMostOne(int rows, String what) {
        if (rows > 1) {
            throw new IllegalStateException(what + " touched " + rows + " rows");
        }
    }
}
