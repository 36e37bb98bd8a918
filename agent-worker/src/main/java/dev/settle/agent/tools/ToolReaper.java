package dev.settle.agent.tools;

import dev.settle.agent.AgentSettings;
import dev.settle.boot.PeriodicTask;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

import java.time.Duration;

/**
 * Executions stuck in PENDING or EXECUTING past a timeout (default 2 × lease TTL) that no live lease owns
 * become FAILED with a clear result: the client sees it, the model never sees a dangling call. The side effect
 * and COMPLETED commit in one transaction, so a stuck execution was never applied and is marked retryable. A
 * slow call whose holder's lease is live is left alone (it may still complete), and so is a row an attempt's
 * transaction still holds (it can only roll back; the reaper takes the row on a later round).
 */
@Component
class ToolReaper extends PeriodicTask {
    private static final Logger log = LoggerFactory.getLogger(ToolReaper.class);
    private final ToolExecutions executions;
    private final Duration timeout;

    public ToolReaper(ToolExecutions executions, AgentSettings settings) {
        super("tool-reaper", every(timeout(settings)));
        this.executions = executions;
        this.timeout = timeout(settings);
    }

    static Duration timeout(AgentSettings settings) {
        return settings.agent().toolTimeout() != null
                ? settings.agent().toolTimeout()
                : settings.lease().ttl().multipliedBy(2);
    }

    private static Duration every(Duration timeout) {
        return timeout.dividedBy(4).isZero() ? Duration.ofMillis(100) : timeout.dividedBy(4);
    }

    @Override
    protected void tick() {
        reap();
    }

    /** @return how many executions were marked FAILED */
    public int reap() {
        int reaped = executions.reap(timeout.toNanos() / 1000);
        if (reaped > 0) {
            log.warn("{} tool executions stuck longer than {} marked FAILED", reaped, timeout);
        }
        return reaped;
    }
}
