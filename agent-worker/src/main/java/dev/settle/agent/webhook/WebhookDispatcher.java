package dev.settle.agent.webhook;

import dev.settle.agent.AgentSettings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.stereotype.Component;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Sends the outbox. It lives in the agent worker because the outbox rows are born in the agent's commit
 * transaction and the worker already scales out; every attempt is claimed by a guarded UPDATE
 * ({@link DeliveryQueue}), so any number of instances can run. Each attempt runs on its own virtual thread:
 * one slow endpoint does not hold the loop.
 *
 * <ol>
 *   <li>Every poll interval: list due deliveries (first pending per session), claim each.</li>
 *   <li>POST it; 2xx → DELIVERED. Otherwise the next delay of the schedule → retry, or FAILED when the
 *       schedule is exhausted. Every attempt is recorded.</li>
 * </ol>
 */
@Component
public class WebhookDispatcher implements SmartLifecycle {
    private static final Logger log = LoggerFactory.getLogger(WebhookDispatcher.class);
    private final DeliveryQueue queue;
    private final WebhookSender sender;
    private final AgentSettings.Webhook settings;
    private final ExecutorService attempts = Executors.newVirtualThreadPerTaskExecutor();
    private volatile Thread loop;

    public WebhookDispatcher(DeliveryQueue queue, WebhookSender sender, AgentSettings settings) {
        this.queue = queue;
        this.sender = sender;
        this.settings = settings.webhook();
    }

    @Override
    public void start() {
        if (!sender.configured()) {
            log.warn("SETTLE_WEBHOOK_URL is not set: replies wait in the outbox (webhook_delivery) until it is");
            return;
        }
        loop = Thread.ofPlatform().name("webhook-dispatcher").daemon().start(this::run);
    }

    private void run() {
        while (!Thread.currentThread().isInterrupted()) {
            try {
                List<Long> due = queue.due(50);
                for (long id : due) {
                    DeliveryQueue.Claim claim = queue.claim(id, claimMicros());
                    if (claim != null) {
                        attempts.execute(() -> attempt(claim));
                    }
                }
                Thread.sleep(settings.pollInterval());
            } catch (InterruptedException e) {
                return;
            } catch (RuntimeException e) {
                log.warn("webhook dispatch loop: {}", e.toString());
                sleepQuietly(Duration.ofSeconds(1));
            }
        }
    }

    void attempt(DeliveryQueue.Claim claim) {
        WebhookSender.Result result = sender.send(claim.webhookId(), claim.payload());
        try {
            queue.recordAttempt(claim, result.latencyMicros(), result.status(), result.error());
            if (result.ok()) {
                queue.delivered(claim, result.status());
                return;
            }
            String error = result.error() != null ? result.error() : "HTTP " + result.status();
            List<Duration> schedule = settings.schedule();
            if (claim.attempt() >= schedule.size()) {
                log.warn("webhook {} dead after {} attempts: {}", claim.webhookId(), claim.attempt(), error);
                queue.dead(claim, result.status(), error);
            } else {
                queue.retry(claim, schedule.get(claim.attempt()).toNanos() / 1000, result.status(), error);
            }
        } catch (RuntimeException e) {
            log.warn("webhook {}: could not record the attempt ({}); its claim expires and it is retried",
                    claim.webhookId(), e.toString());
        }
    }

    private long claimMicros() {
        return settings.timeout().plusSeconds(15).toNanos() / 1000;
    }

    private static void sleepQuietly(Duration d) {
        try {
            Thread.sleep(d);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @Override
    public void stop() {
        Thread t = loop;
        if (t != null) {
            t.interrupt();
        }
        attempts.shutdownNow();
    }

    @Override
    public boolean isRunning() {
        return loop != null && loop.isAlive();
    }
}
