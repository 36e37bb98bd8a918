package dev.settle.testsupport;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A gate that threads pass while it is open and wait at while it is {@link #close closed}, counted by
 * {@link #waiting}, until {@link #open}: what a test uses to hold a statement of an application at a chosen point
 * (in a {@link WatchingInterceptor}) while it does something else, then let it go on.
 */
public final class Gate {
    private volatile CountDownLatch latch = new CountDownLatch(0);
    private final AtomicInteger waiting = new AtomicInteger();

    /** Threads that reach the gate from now on wait. */
    public void close() {
        latch = new CountDownLatch(1);
    }

    /** Lets every waiting thread (and every later one) through. */
    public void open() {
        latch.countDown();
    }

    /** Threads waiting at the gate now. */
    public int waiting() {
        return waiting.get();
    }

    /** Waits while the gate is closed; returns at once when it is open. */
    public void pass() {
        CountDownLatch l = latch;
        if (l.getCount() == 0) {
            return;
        }
        waiting.incrementAndGet();
        try {
            l.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } finally {
            waiting.decrementAndGet();
        }
    }
}
