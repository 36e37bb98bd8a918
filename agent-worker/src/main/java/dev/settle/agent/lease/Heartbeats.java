package dev.settle.agent.lease;

import com.zaxxer.hikari.HikariDataSource;
import dev.settle.agent.AgentSettings;
import dev.settle.boot.PeriodicTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.boot.jdbc.autoconfigure.DataSourceProperties;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Keeps every lease this worker holds alive while its turn runs.
 *
 * <ol>
 *   <li>Every TTL / 3, one short transaction per 500 leases renews them all ({@link SessionLease#renewAll}), on a
 *       connection pool of its own: thousands of turns waiting for database connections cannot delay a
 *       renewal past the TTL.</li>
 *   <li>A renewal never queues behind a row lock while it holds another: rows locked by others are skipped and
 *       renewed afterwards one row per statement, and a round waits at most once, at most {@link #LOCK_WAIT_SECONDS}
 *       (the pool's session lock wait timeout), however many rows others hold ({@link SessionLease#renewAll}).</li>
 *   <li>A lease that was not renewed is lost: its turn is told (and its thread interrupted); from then on
 *       the holder writes nothing. Once its beat is closed, a turn is never interrupted by it: the turn's
 *       release and re-arm run after the close.</li>
 *   <li>The renewal loop starts before, and stops after, every other lifecycle component (the event listeners and
 *       the scanner that run turns): no turn runs without it.</li>
 * </ol>
 */
@Component
public class Heartbeats extends PeriodicTask implements DisposableBean {
    private static final Logger log = LoggerFactory.getLogger(Heartbeats.class);
    /** How long a renewal waits for one row another transaction holds (the smallest lock wait MySQL allows). */
    static final int LOCK_WAIT_SECONDS = 1;

    private final Map<String, Beat> beats = new ConcurrentHashMap<>();
    private final SessionLease leases;
    private final HikariDataSource pool;
    private final JdbcTemplate jdbc;

    public Heartbeats(SessionLease leases, AgentSettings settings, DataSourceProperties dataSource) {
        super(
                "lease-heartbeat",
                Duration.ofMillis(Math.max(10, settings.lease().heartbeat().toMillis())));
        this.leases = leases;
        this.pool = dataSource
                .initializeDataSourceBuilder()
                .type(HikariDataSource.class)
                .build();
        this.pool.setPoolName("lease-heartbeats");
        this.pool.setMaximumPoolSize(2);
        this.pool.setMinimumIdle(1);
        // one renewal statement locks many session rows: under REPEATABLE READ a scan would also keep the rows
        // it only looked at, and the gaps between them, locked until the end of the statement
        this.pool.setTransactionIsolation("TRANSACTION_READ_COMMITTED");
        this.pool.setConnectionInitSql("SET SESSION innodb_lock_wait_timeout = " + LOCK_WAIT_SECONDS);
        this.jdbc = new JdbcTemplate(pool);
    }

    @Override
    public int getPhase() {
        return Integer.MIN_VALUE;
    }

    @Override
    protected void tick() {
        renew();
    }

    /** A running heartbeat for one lease; close it before releasing the lease. */
    public final class Beat implements AutoCloseable {
        private final AtomicBoolean alive = new AtomicBoolean(true);
        private final SessionLease.Lease lease;
        private final Thread worker;
        /** Guarded by this beat: set by {@link #close()}; after it, {@link #lost()} interrupts nothing. */
        private boolean closed;

        private Beat(SessionLease.Lease lease, Thread worker) {
            this.lease = lease;
            this.worker = worker;
        }

        public boolean alive() {
            return alive.get();
        }

        void lost() {
            if (!alive.compareAndSet(true, false)) {
                return;
            }
            log.warn("session {}: lease epoch {} lost; stopping the turn", lease.sessionId(), lease.epoch());
            synchronized (this) {
                // the turn may have finished since the renewal: its thread now releases and re-arms, or runs
                // another turn; an interrupt there would break that, not stop this turn
                if (!closed) {
                    worker.interrupt();
                }
            }
        }

        /** After this returns, this beat never interrupts the turn's thread. */
        @Override
        public void close() {
            synchronized (this) {
                closed = true;
            }
            beats.remove(lease.token());
        }
    }

    public Beat start(SessionLease.Lease lease) {
        Beat beat = new Beat(lease, Thread.currentThread());
        beats.put(lease.token(), beat);
        return beat;
    }

    /** One round: renew every held lease, tell the turns whose lease is gone. Rounds never overlap. */
    public synchronized void renew() {
        List<Beat> held = new ArrayList<>(beats.values());
        if (held.isEmpty()) {
            return;
        }
        try {
            Set<String> live =
                    leases.renewAll(jdbc, held.stream().map(b -> b.lease).toList());
            for (Beat beat : held) {
                if (!live.contains(beat.lease.token()) && beats.containsKey(beat.lease.token())) {
                    beat.lost();
                }
            }
        } catch (RuntimeException e) {
            log.warn("lease renewal of {} leases failed ({}); will retry", held.size(), e.toString());
        }
    }

    int held() {
        return beats.size();
    }

    @Override
    public void destroy() {
        stop();
        pool.close();
    }
}
