package dev.settle.agent.turn;

import dev.settle.agent.AgentSettings;
import org.springframework.stereotype.Component;

import java.util.concurrent.Semaphore;

/**
 * The worker's {@code settle.agent.max-in-flight}: every turn it starts, from a SessionReady event or from the
 * orphaned-lease scanner, holds one slot from before its claim until it has released its lease.
 */
@Component
class TurnSlots {
    private final Semaphore slots;

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

    int available() {
        return slots.availablePermits();
    }
}
