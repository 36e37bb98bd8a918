package dev.settle.agent.lease;

import java.util.concurrent.atomic.AtomicReference;

/**
 * What may stop a running turn from outside: a lost lease (the heartbeat) or an interrupt (a newer message
 * under the merge policy). The model stream registers how to cancel itself while it runs.
 */
public final class TurnControl {
    private final Heartbeats.Beat beat;
    private final AtomicReference<String> interrupt = new AtomicReference<>();
    private final AtomicReference<Runnable> onInterrupt = new AtomicReference<>();

    public TurnControl(Heartbeats.Beat beat) {
        this.beat = beat;
    }

    public boolean leaseAlive() {
        return beat == null || beat.alive();
    }

    /** Asks the turn to stop generating; the first reason wins. @return true for the first request */
    public boolean interrupt(String reason) {
        if (!interrupt.compareAndSet(null, reason)) {
            return false;
        }
        Runnable cancel = onInterrupt.get();
        if (cancel != null) {
            cancel.run();
        }
        return true;
    }

    public String interruptReason() {
        return interrupt.get();
    }

    /** Runs {@code cancel} on interrupt, at once if one is already requested. */
    public void whileStreaming(Runnable cancel) {
        onInterrupt.set(cancel);
        if (interrupt.get() != null) {
            cancel.run();
        }
    }

    public void streamEnded() {
        onInterrupt.set(null);
    }

    /** Thrown when the turn was interrupted by a newer message. */
    public static final class Interrupted extends RuntimeException {
        public Interrupted(String reason) {
            super(reason);
        }
    }
}
