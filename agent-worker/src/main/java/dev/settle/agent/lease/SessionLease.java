package dev.settle.agent.lease;

import dev.settle.agent.AgentSettings;
import dev.settle.schema.SessionRules;
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
            UPDATE chat_session s
               SET lease_epoch = LAST_INSERT_ID((lease_epoch + 1) * 2 + (lease_token IS NOT NULL)) DIV 2,
                   lease_token = ?,
                   lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
             WHERE id = ?
               AND\s""" + SessionRules.LEASE_FREE + " AND " + SessionRules.HAS_WORK;

    static final String EPOCH = "SELECT lease_epoch FROM chat_session WHERE id = ? AND lease_token = ?";

    static final String HEARTBEAT = """
            UPDATE chat_session s
               SET lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
             WHERE id = ? AND\s""" + SessionRules.LEASE_OURS;

    /**
     * A renewal never waits for a row lock: it first locks, per 500 leases, the rows that are still ours, live and
     * not locked by anyone right now ({@code SKIP LOCKED}), then renews exactly those ({@link #RENEW_ALL}, on rows
     * it already holds), in one short transaction. A row held for a moment (a POST bumping the version, a turn
     * committing) cannot delay the renewal of the others; such rows are renewed afterwards ({@link #renewAll}).
     * Expired leases are not revived: their holders are dead. (Expiry is judged at a statement's start: a renewal that
     * began before the expiry and waited for the row's lock renews it afterwards. Nobody took the lease meanwhile —
     * a claim needs that same row — but a guarded write of the holder may have been refused in between.)
     */
    static final String LOCK_FOR_RENEWAL = """
            SELECT s.id, s.lease_token FROM chat_session s
             WHERE s.id IN (%s) AND s.lease_token IN (%s) AND\s""" + SessionRules.LEASE_UNEXPIRED + """

               FOR UPDATE SKIP LOCKED""";

    static final String RENEW_ALL = """
            UPDATE chat_session s
               SET lease_expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND
             WHERE s.id IN (%s) AND s.lease_token IN (%s) AND\s""" + SessionRules.LEASE_UNEXPIRED;

    /**
     * Lock order: a transaction that writes under a lease locks the session row exclusively <em>first</em>.
     * A statement that joins chat_session takes a shared lock on the row; upgrading it later in the same
     * transaction (an event append bumps event_seq) deadlocks with any renewal queued on that row, and InnoDB
     * may pick the turn as the victim (e.g. {@code Turns.begin} against {@link #RENEW_ALL}).
     */
    static final String LOCK_HELD = """
            SELECT s.id FROM chat_session s
             WHERE s.id = ? AND\s""" + SessionRules.LEASE_OURS + " FOR UPDATE";

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
        dev.settle.schema.OkPacket.Reserved claimed =
                dev.settle.schema.OkPacket.update(jdbc, CLAIM, token, micros(ttl), sessionId);
        if (claimed.rows() == 0) {
            log.debug("session {} busy or nothing to answer", sessionId);
            return null;
        }
        expectOne(claimed.rows(), "claim");
        long id = claimed.lastInsertId();
        return id > 0
                ? new Lease(sessionId, token, id / 2, id % 2 == 1)
                : new Lease(sessionId, token, jdbc.queryForObject(EPOCH, Long.class, sessionId, token));
    }

    /**
     * Inside the caller's transaction: locks the session row exclusively while {@code lease} is live
     * ({@link #LOCK_HELD}); until commit no renewal, takeover or message can interleave.
     *
     * @return false when the lease is lost (nothing locked)
     */
    public boolean lockHeld(Lease lease) {
        return !jdbc.queryForList(LOCK_HELD, Long.class, lease.sessionId(), lease.token())
                .isEmpty();
    }

    /** @return false when the lease is lost: the holder must stop and write nothing more */
    public boolean heartbeat(Lease lease) {
        return heartbeat(jdbc, lease);
    }

    /** {@link #HEARTBEAT} through {@code via}, committing alone. @return false when the lease is lost */
    private boolean heartbeat(JdbcTemplate via, Lease lease) {
        int rows = via.update(HEARTBEAT, micros(ttl), lease.sessionId(), lease.token());
        expectAtMostOne(rows, "heartbeat");
        return rows == 1;
    }

    /**
     * Renews {@code held} through {@code via} (the heartbeat's own connection pool, so turns queueing for
     * connections cannot starve the renewals) and returns the tokens that are still live.
     *
     * <ol>
     *   <li>Per 500 leases, the rows nobody else holds are locked and renewed at once ({@link #renewUnlocked}); then
     *       once more for the rows that were held, most of them free again a moment later.</li>
     *   <li>The rows held both times are renewed one row per statement ({@link #HEARTBEAT}, committing alone) on the
     *       pool's short lock wait: a statement waiting for its row holds no other. One statement for all of them
     *       would lock each row as it got it and keep it while it waited for the next, so the POSTs of the worker's
     *       other sessions would queue behind a row someone else holds.</li>
     *   <li>A round waits for a lock at most once: once a statement timed out on a held row, the leases not yet
     *       renewed count as live this round (they are not known to be lost) and the next round tries again. A round
     *       that waited for each held row in turn would last one lock wait per row while every other lease of the
     *       worker went unrenewed.</li>
     * </ol>
     */
    public java.util.Set<String> renewAll(JdbcTemplate via, java.util.List<Lease> held) {
        java.util.Set<String> live = new java.util.HashSet<>();
        java.util.List<Lease> stillHeld = renewFree(via, renewFree(via, held, live), live);
        for (int i = 0; i < stillHeld.size(); i++) {
            Lease lease = stillHeld.get(i);
            try {
                if (heartbeat(via, lease)) {
                    live.add(lease.token());
                } // else stolen or expired: lost
            } catch (org.springframework.dao.PessimisticLockingFailureException busy) {
                java.util.List<Lease> rest = stillHeld.subList(i, stillHeld.size());
                log.info("{} lease rows locked past the renewal's lock wait; renewing them next round", rest.size());
                rest.forEach(l -> live.add(l.token()));
                break;
            }
        }
        return live;
    }

    /**
     * {@link #renewUnlocked} per 500 of {@code leases}, adding the tokens it renewed to {@code live}.
     *
     * @return the leases it did not renew: their rows were held, or they are lost
     */
    private java.util.List<Lease> renewFree(
            JdbcTemplate via, java.util.List<Lease> leases, java.util.Set<String> live) {
        java.util.List<Lease> notRenewed = new java.util.ArrayList<>();
        for (int from = 0; from < leases.size(); from += 500) {
            java.util.List<Lease> part = leases.subList(from, Math.min(leases.size(), from + 500));
            java.util.Set<String> renewed = renewUnlocked(via, part);
            live.addAll(renewed);
            part.stream().filter(l -> !renewed.contains(l.token())).forEach(notRenewed::add);
        }
        return notRenewed;
    }

    /** One transaction: lock the rows of {@code part} nobody else holds, renew them. @return their tokens */
    private java.util.Set<String> renewUnlocked(JdbcTemplate via, java.util.List<Lease> part) {
        String marks = String.join(",", java.util.Collections.nCopies(part.size(), "?"));
        return via.execute((org.springframework.jdbc.core.ConnectionCallback<java.util.Set<String>>) c -> {
            boolean autoCommit = c.getAutoCommit();
            c.setAutoCommit(false);
            try {
                java.util.Map<Long, String> locked = new java.util.LinkedHashMap<>();
                try (java.sql.PreparedStatement ps = c.prepareStatement(LOCK_FOR_RENEWAL.formatted(marks, marks))) {
                    int i = 1;
                    for (Lease l : part) {
                        ps.setLong(i++, l.sessionId());
                    }
                    for (Lease l : part) {
                        ps.setString(i++, l.token());
                    }
                    try (java.sql.ResultSet rs = ps.executeQuery()) {
                        while (rs.next()) {
                            locked.put(rs.getLong(1), rs.getString(2));
                        }
                    }
                }
                if (!locked.isEmpty()) {
                    String lockedMarks = String.join(",", java.util.Collections.nCopies(locked.size(), "?"));
                    try (java.sql.PreparedStatement ps =
                            c.prepareStatement(RENEW_ALL.formatted(lockedMarks, lockedMarks))) {
                        int i = 1;
                        ps.setLong(i++, micros(ttl));
                        for (Long id : locked.keySet()) {
                            ps.setLong(i++, id);
                        }
                        for (String token : locked.values()) {
                            ps.setString(i++, token);
                        }
                        if (ps.executeUpdate() != locked.size()) {
                            c.commit(); // a lease expired between the two statements: each is settled alone
                            return java.util.Set.<String>of();
                        }
                    }
                }
                c.commit();
                return new java.util.HashSet<>(locked.values());
            } catch (java.sql.SQLException | RuntimeException e) {
                c.rollback();
                throw e;
            } finally {
                c.setAutoCommit(autoCommit);
            }
        });
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

    public static void expectAtMostOne(int rows, String what) {
        if (rows > 1) {
            throw new IllegalStateException(what + " touched " + rows + " rows");
        }
    }
}
