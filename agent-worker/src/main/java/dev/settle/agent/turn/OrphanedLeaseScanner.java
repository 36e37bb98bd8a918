package dev.settle.agent.turn;

import dev.settle.agent.AgentSettings;
import dev.settle.boot.PeriodicTask;
import dev.settle.schema.SessionRules;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Takeover after a crash without waiting for Kafka: a holder that died mid-turn leaves a lease that expires
 * on the DB clock, and the SessionReady events of its session may sit in a partition still assigned to the
 * dead consumer until the group notices. Every half TTL each agent worker looks for sessions with an
 * expired lease and unanswered messages, and runs them (the CAS claim makes concurrent scanners safe). Each such
 * turn takes a slot of {@code settle.agent.max-in-flight} ({@link TurnSlots}) or is not started: with every slot
 * taken, the orphans wait for a later scan (or for their SessionReady).
 */
@Component
public class OrphanedLeaseScanner extends PeriodicTask {
    private static final Logger log = LoggerFactory.getLogger(OrphanedLeaseScanner.class);

    public static final String ORPHANS = """
            SELECT s.id FROM chat_session s
             WHERE s.oldest_unanswered_at IS NOT NULL
               AND\s""" + SessionRules.LEASE_EXPIRED + " AND " + SessionRules.HAS_WORK + """

             LIMIT 100""";

    private final JdbcTemplate jdbc;
    private final TurnRunner runner;
    private final TurnSlots slots;
    private final ExecutorService turns = Executors.newVirtualThreadPerTaskExecutor();
    private final boolean enabled;

    public OrphanedLeaseScanner(JdbcTemplate jdbc, TurnRunner runner, TurnSlots slots, AgentSettings settings) {
        super("orphaned-lease-scanner", settings.lease().ttl().dividedBy(2));
        this.jdbc = jdbc;
        this.runner = runner;
        this.slots = slots;
        this.enabled = settings.agent().orphanScan();
    }

    @Override
    protected boolean enabled() {
        return enabled;
    }

    @Override
    protected void tick() {
        for (long id : jdbc.queryForList(ORPHANS, Long.class)) {
            if (!slots.tryAcquire()) {
                log.info("every turn slot taken; orphaned sessions wait for a later scan");
                return;
            }
            log.info("session {}: lease expired with messages unanswered; taking over", id);
            turns.execute(() -> {
                try {
                    runner.run(id); // TurnRunner counts the takeover
                } finally {
                    slots.release();
                }
            });
        }
    }

    @Override
    public void stop() {
        super.stop();
        turns.shutdownNow();
    }
}
