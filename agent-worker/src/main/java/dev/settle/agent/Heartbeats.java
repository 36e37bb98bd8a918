package dev.settle.agent;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.stereotype.Component;

import java.time.Duration;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

/**
 * Keeps a held lease alive while its turn runs (every TTL / 3). The first failed renewal marks the lease
 * lost and interrupts the turn's thread: from then on the holder writes nothing.
 */
@Component
public class Heartbeats implements DisposableBean {
    private static final Logger log = LoggerFactory.getLogger(Heartbeats.class);
    private final ScheduledExecutorService scheduler = Executors.newScheduledThreadPool(2,
            Thread.ofPlatform().name("lease-heartbeat-", 0).daemon().factory());
    private final SessionLease leases;
    private final Duration period;

    public Heartbeats(SessionLease leases, AgentSettings settings) {
        this.leases = leases;
        this.period = settings.lease().heartbeat();
    }

    /** A running heartbeat for one lease; close it before releasing the lease. */
    public final class Beat implements AutoCloseable {
        private final AtomicBoolean alive = new AtomicBoolean(true);
        private final ScheduledFuture<?> future;

        private Beat(SessionLease.Lease lease, Thread worker) {
            long ms = Math.max(10, period.toMillis());
            future = scheduler.scheduleWithFixedDelay(() -> {
                try {
                    if (alive.get() && !leases.heartbeat(lease)) {
                        log.warn("session {}: lease epoch {} lost; stopping the turn", lease.sessionId(), lease.epoch());
                        alive.set(false);
                        worker.interrupt();
                    }
                } catch (RuntimeException e) {
                    log.warn("session {}: heartbeat failed ({}); will retry", lease.sessionId(), e.toString());
                }
            }, ms, ms, TimeUnit.MILLISECONDS);
        }

        public boolean alive() {
            return alive.get();
        }

        @Override
        public void close() {
            future.cancel(false);
        }
    }

    public Beat start(SessionLease.Lease lease) {
        return new Beat(lease, Thread.currentThread());
    }

    @Override
    public void destroy() {
        scheduler.shutdownNow();
    }
}
