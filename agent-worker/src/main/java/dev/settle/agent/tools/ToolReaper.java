package dev.settle.agent.tools;

import dev.settle.agent.AgentSettings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;

import java.time.Duration;

/**
 * Executions stuck in PENDING or EXECUTING past a timeout (default 2 × lease TTL) become FAILED with a clear
 * result: the client sees it, the model never sees a dangling call. The side effect and COMPLETED commit in
 * one transaction, so a stuck execution was never applied and is marked retryable.
 */
@Component
public class ToolReaper implements SmartLifecycle {
    private static final Logger log = LoggerFactory.getLogger(ToolReaper.class);
    private final ToolExecutions executions;
    private final Duration timeout;
    private volatile Thread loop;

    public ToolReaper(ToolExecutions executions, AgentSettings settings) {
        this.executions = executions;
        this.timeout = settings.agent().toolTimeout() != null ? settings.agent().toolTimeout()
                : settings.lease().ttl().multipliedBy(2);
    }

    /** @return how many executions were marked FAILED */
    public int reap() {
        int reaped = executions.reap(timeout.toNanos() / 1000);
        if (reaped > 0) {
            log.warn("{} tool executions stuck longer than {} marked FAILED", reaped, timeout);
        }
        return reaped;
    }

    @Override
    public void start() {
        Duration every = timeout.dividedBy(4).isZero() ? Duration.ofMillis(100) : timeout.dividedBy(4);
        loop = Thread.ofPlatform().name("tool-reaper").daemon().start(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                try {
                    Thread.sleep(every);
                    reap();
                } catch (InterruptedException e) {
                    return;
                } catch (RuntimeException e) {
                    log.warn("tool reaper: {}", e.toString());
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
