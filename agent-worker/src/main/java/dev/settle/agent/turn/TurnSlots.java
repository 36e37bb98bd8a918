package dev.settle.agent.turn;

import dev.settle.agent.AgentSettings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executor;
import java.util.concurrent.Semaphore;

/**
 * The worker's {@code settle.agent.max-in-flight}: every turn it starts, from a SessionReady event or from the
 * orphaned-lease scanner, holds one slot from before its claim until it has released its lease. It also knows which
 * sessions have a turn of this worker in flight, from before its claim to its end ({@link #running}).
 */
@Component
class TurnSlots {
    private static final Logger log = LoggerFactory.getLogger(TurnSlots.class);
    private final Semaphore slots;
    /** Sessions with a turn of this worker in flight: how many (a SessionReady's and a scan's may overlap). */
    private final ConcurrentHashMap<Long, Integer> sessions = new ConcurrentHashMap<>();

    public TurnSlots(AgentSettings settings) {
        this.slots = new Semaphore(settings.agent().maxInFlight());
    }

    /** Waits for a slot (back-pressure on the event listener). */
    void acquire() throws InterruptedException {
        slots.acquire();
    }

    /** @return false when every slot is taken: start nothing now */
    boolean tryAcquire() {
        return slots.tryAcquire();
    }

    void release() {
        slots.release();
    }

    /**
     * Runs a turn of {@code sessionId} on {@code threads} in the slot the caller took, and gives the slot back when it
     * ends. A turn that fails unexpectedly is logged (a database error in one line, anything else with its stack): its
     * lease expires or was released, and the sweeper or the orphan scanner runs the session again.
     */
    void start(Executor threads, long sessionId, Runnable turn) {
        sessions.merge(sessionId, 1, Integer::sum);
        threads.execute(() -> {
            try {
                turn.run();
            } catch (RuntimeException e) {
                if (DatabaseErrors.isDatabase(e)) {
                    log.warn(
                            "turn for session {} failed on a database error; the sweeper will retry: {}",
                            sessionId,
                            e.toString());
                } else {
                    log.error("turn for session {} failed unexpectedly; the sweeper will retry", sessionId, e);
                }
            } finally {
                sessions.computeIfPresent(sessionId, (id, n) -> n == 1 ? null : n - 1);
                release();
            }
        });
    }

    /** @return a turn of this worker for {@code sessionId} is in flight (started, not yet ended) */
    boolean running(long sessionId) {
        return sessions.containsKey(sessionId);
    }

    int available() {
        return slots.availablePermits();
    }
}
