package dev.settle.agent;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;

import java.time.Duration;

/**
 * A background loop of the worker: {@link #tick()} every interval on a platform thread of its own, started
 * and stopped with the application. A failed tick is logged and the loop goes on.
 */
public abstract class PeriodicTask implements SmartLifecycle {
    private static final Logger log = LoggerFactory.getLogger(PeriodicTask.class);
    private final String name;
    private final Duration interval;
    private volatile Thread loop;

    protected PeriodicTask(String name, Duration interval) {
        this.name = name;
        this.interval = interval;
    }

    protected abstract void tick();

    protected boolean enabled() {
        return true;
    }

    @Override
    public void start() {
        if (!enabled()) {
            return;
        }
        loop = Thread.ofPlatform().name(name).daemon().start(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                try {
                    Thread.sleep(interval);
                    tick();
                } catch (java.lang.InterruptedException e) {
                    return;
                } catch (RuntimeException e) {
                    log.warn("{}: {}", name, e.toString());
                }
            }
        });
    }

    @Override
    public void stop() {
        Thread t = loop;
        if (t != null) {
            t.interrupt();
        }
    }

    @Override
    public boolean isRunning() {
        return loop != null && loop.isAlive();
    }
}
