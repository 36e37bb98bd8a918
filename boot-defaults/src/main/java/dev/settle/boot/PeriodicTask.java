package dev.settle.boot;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;

/**
 * The one way a Settle service runs a background loop: rounds on a platform thread of its own, started and
 * stopped with the application.
 *
 * <p>A fixed-rate task implements {@link #tick()} and waits {@code interval} before each round. A task that knows
 * when it has work next overrides {@link #round()} and returns the pause before the next round
 * ({@link Duration#ZERO}: at once). A round that throws is logged and followed by a backoff that starts at
 * 100 ms and doubles up to {@code interval} (at least 100 ms); the loop never ends on a failure.
 *
 * <p>{@link #wake()} ends the current pause at once (a wake during a round makes the next pause end at once), so a
 * task told about new work by its own process needs no short poll interval to notice it soon.
 *
 * <p>Stopping signals the loop and waits up to 5 s for the round in progress to finish: the thread is never
 * interrupted, so a round inside a JDBC call or a transaction ends cleanly instead of breaking its connection.
 */
public abstract class PeriodicTask implements SmartLifecycle {
    private static final Logger log = LoggerFactory.getLogger(PeriodicTask.class);
    private static final Duration FIRST_BACKOFF = Duration.ofMillis(100);
    private static final Duration STOP_WAIT = Duration.ofSeconds(5);
    private final String name;
    private final Duration interval;
    private volatile CountDownLatch stopSignal;
    /** A permit: end the current (or the next) pause at once. */
    private final Semaphore wakeups = new Semaphore(0);

    private volatile Thread loop;

    protected PeriodicTask(String name, Duration interval) {
        this.name = name;
        this.interval = interval;
    }

    /** One round of a fixed-rate task. */
    protected void tick() {}

    /** One round; returns the pause before the next. Default: {@link #tick()}, then {@code interval}. */
    protected Duration round() {
        tick();
        return interval;
    }

    /**
     * The pause until something due {@code micros} from now (as the database reports it): at once when it is due,
     * {@code longest} when nothing is (null) or it is due later than that.
     */
    protected static Duration untilDue(Long micros, Duration longest) {
        if (micros == null) {
            return longest;
        }
        return micros <= 0 ? Duration.ZERO : min(Duration.ofNanos(micros * 1000), longest);
    }

    /** The pause of a fixed-rate task, and the longest backoff. */
    protected final Duration interval() {
        return interval;
    }

    /** The pause before the first round. Default: {@code interval}. */
    protected Duration firstDelay() {
        return interval;
    }

    protected boolean enabled() {
        return true;
    }

    /** Ends the pause before the next round now; every wake until that round starts is answered by it. */
    protected final void wake() {
        wakeups.release();
    }

    @Override
    public synchronized void start() {
        if (loop != null || !enabled()) {
            return;
        }
        CountDownLatch stop = new CountDownLatch(1);
        stopSignal = stop;
        wakeups.drainPermits(); // a stop's wake-up is not the new loop's
        loop = Thread.ofPlatform().name(name).daemon().start(() -> run(stop));
    }

    private void run(CountDownLatch stop) {
        Duration pause = firstDelay();
        Duration backoff = Duration.ZERO;
        while (true) {
            try {
                if (!pause.isZero() && wakeups.tryAcquire(pause.toNanos(), TimeUnit.NANOSECONDS)) {
                    wakeups.drainPermits();
                }
            } catch (InterruptedException e) {
                return;
            }
            if (stop.getCount() == 0) {
                return;
            }
            try {
                pause = round();
                backoff = Duration.ZERO;
            } catch (RuntimeException e) {
                backoff = backoff.isZero() ? FIRST_BACKOFF : min(backoff.multipliedBy(2), max(interval, FIRST_BACKOFF));
                log.warn("{}: round failed ({}), next in {}", name, e.toString(), backoff);
                pause = backoff;
            }
        }
    }

    @Override
    public synchronized void stop() {
        Thread t = loop;
        if (t == null) {
            return;
        }
        stopSignal.countDown();
        wakeups.release();
        try {
            if (!t.join(STOP_WAIT)) {
                log.warn("{}: the round in progress did not end within {}", name, STOP_WAIT);
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        loop = null;
    }

    @Override
    public boolean isRunning() {
        Thread t = loop;
        return t != null && t.isAlive();
    }

    private static Duration min(Duration a, Duration b) {
        return a.compareTo(b) <= 0 ? a : b;
    }

    private static Duration max(Duration a, Duration b) {
        return a.compareTo(b) >= 0 ? a : b;
    }
}
