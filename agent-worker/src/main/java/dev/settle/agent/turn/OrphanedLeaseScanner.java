package dev.settle.agent.turn;

import dev.settle.agent.AgentSettings;
import dev.settle.boot.PeriodicTask;
import dev.settle.schema.SessionRules;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Takeover after a crash without waiting for Kafka: a holder that died mid-turn leaves a lease that expires
 * on the DB clock, and the SessionReady events of its session may sit in a partition still assigned to the
 * dead consumer until the group notices. Each agent worker looks for sessions with an expired lease and unanswered
 * messages, and runs them (the CAS claim makes concurrent scanners safe). Each such turn takes a slot of
 * {@code settle.agent.max-in-flight} ({@link TurnSlots}) or is not started: with every slot taken, the orphans wait
 * for a later scan (or for their SessionReady).
 *
 * <p>It looks every half TTL, and also at the moment the next lease that missed a renewal expires
 * ({@link #NEXT_EXPIRY}): a live holder renews every TTL / 3, so its lease always has more than 2/3 of the TTL left;
 * one with at most {@link #SUSPECT} of it left has missed a renewal. Such a lease is seen by a look before it expires
 * (looks are at most half a TTL apart), so a dead holder's session is taken over when its lease expires, not up to
 * half a TTL later. A holder that renews late costs one look that finds nothing.
 */
@Component
public class OrphanedLeaseScanner extends PeriodicTask {
    private static final Logger log = LoggerFactory.getLogger(OrphanedLeaseScanner.class);

    public static final String ORPHANS = """
            SELECT s.id FROM chat_session s
             WHERE s.oldest_unanswered_at IS NOT NULL
               AND\s""" + SessionRules.LEASE_EXPIRED + " AND " + SessionRules.HAS_WORK + """

             LIMIT ?""";

    /** The share of the TTL left below which a lease has missed a renewal (a live one keeps more than 2/3). */
    static final double SUSPECT = 0.6;

    /**
     * The microseconds until the earliest expiry among live leases of sessions with unanswered messages that have
     * at most the bound (parameter, microseconds) left: leases that missed a renewal. NULL: none.
     */
    public static final String NEXT_EXPIRY = """
            SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), MIN(s.lease_expires_at)) FROM chat_session s
             WHERE s.oldest_unanswered_at IS NOT NULL
               AND s.lease_expires_at > UTC_TIMESTAMP(6)
               AND s.lease_expires_at <= UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND""";

    private final JdbcTemplate jdbc;
    private final TurnRunner runner;
    private final TurnSlots slots;
    private final ExecutorService turns = Executors.newVirtualThreadPerTaskExecutor();
    private final boolean enabled;
    private final long suspectMicros;

    public OrphanedLeaseScanner(JdbcTemplate jdbc, TurnRunner runner, TurnSlots slots, AgentSettings settings) {
        super("orphaned-lease-scanner", settings.lease().ttl().dividedBy(2));
        this.jdbc = jdbc;
        this.runner = runner;
        this.slots = slots;
        this.enabled = settings.agent().orphanScan();
        this.suspectMicros = (long) (settings.lease().ttl().toNanos() / 1000 * SUSPECT);
    }

    @Override
    protected boolean enabled() {
        return enabled;
    }

    /** Takes over what has expired, then sleeps half a TTL or until the next suspect lease expires. */
    @Override
    protected Duration round() {
        tick();
        Long micros = jdbc.queryForObject(NEXT_EXPIRY, Long.class, suspectMicros);
        // a millisecond past the expiry: the lease is then expired on the database clock too
        return untilDue(micros == null ? null : micros + 1000, interval());
    }

    /**
     * One look takes over as many orphans as this worker has free turn slots: a dead worker may leave thousands, and
     * a fixed page would leave the rest to later looks, half a TTL apart. A session with a turn of this worker in
     * flight is skipped: that turn's claim has not committed yet, and another turn would only queue a second claim
     * behind it (each holding a slot and, while it waits, a pooled connection) to find the lease taken.
     */
    @Override
    protected void tick() {
        int free = slots.available();
        if (free == 0) {
            slotsTaken();
            return;
        }
        for (long id : jdbc.queryForList(ORPHANS, Long.class, free)) {
            if (slots.running(id)) {
                continue; // this worker's takeover of it has not claimed yet (it may wait for the row or a connection)
            }
            if (!slots.tryAcquire()) { // taken by other turns since
                slotsTaken();
                return;
            }
            log.info("session {}: lease expired with messages unanswered; taking over", id);
            slots.start(turns, id, () -> runner.run(id)); // TurnRunner counts the takeover
        }
    }

    private static void slotsTaken() {
        log.info("every turn slot taken; orphaned sessions wait for a later scan");
    }

    @Override
    public void stop() {
        super.stop();
        turns.shutdownNow();
    }
}
