package dev.settle.agent.webhook;

import dev.settle.agent.AgentSettings;
import dev.settle.boot.PeriodicTask;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;
import org.springframework.transaction.event.TransactionPhase;
import org.springframework.transaction.event.TransactionalEventListener;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.LongAdder;

/**
 * Sends the outbox. It lives in the agent worker, not in a service of its own, because the outbox rows are born
 * in the agent's commit transaction (reply and delivery commit together or not at all) and the worker already
 * scales out: every attempt is claimed by a guarded UPDATE ({@link DeliveryQueue}), so any number of instances
 * dispatch side by side, and a dead instance's claims expire and are taken over.
 *
 * <ol>
 *   <li>List due deliveries (the first pending one per session) and start each that this instance is not already
 *       working on, in random order so that instances do not all race for the same row. The listing also tells when
 *       the next delivery becomes due, and the loop sleeps until then, at most a poll interval. It lists again at
 *       once after this instance committed a delivery row ({@link OutboxWritten}), after a failed attempt was
 *       rescheduled, after an attempt that a later delivery of its session waits for has ended, and when a full
 *       batch started new work. What another instance or an operator makes due (a retry it scheduled, a reply queued
 *       behind one it delivered, an operator retry, an expired claim) is found within a poll interval.</li>
 *   <li>Each attempt is claimed and sent on its own virtual thread: the loop waits neither on the database's
 *       commits nor on the network, so one slow or hanging endpoint holds only its own attempts. The claim lasts
 *       the timeout plus a margin ({@code settle.webhook.claim-margin}, 15 s); losing the claim race to another instance is normal and silent.</li>
 *   <li>Endpoint disabled (410) and this is not an operator retry → FAILED without sending. Otherwise POST it
 *       ({@link WebhookSender}: SSRF guard, signatures, timeout) and apply the {@link AttemptVerdict}: delivered,
 *       retry after the jittered schedule delay or the receiver's Retry-After, or FAILED (dead letter).</li>
 *   <li>Nothing goes out unsigned or signed by the wrong party ({@link DeliveryQueue#owner}): a tenant's endpoint
 *       without that tenant's secrets, or the deployment's without SETTLE_WEBHOOK_SECRET (unless
 *       SETTLE_WEBHOOK_ALLOWUNSIGNED), makes the attempt fail with that reason, nothing sent. It follows the retry
 *       schedule like any failed attempt, so secrets set in time (read afresh on each claim) rescue it, and a
 *       dead letter can be retried by an operator.</li>
 *   <li>Stop: no new claims; in-flight attempts get a short grace, then are interrupted and hand their claim
 *       back (due at once for another instance). A killed instance hands nothing back: its claims expire.</li>
 * </ol>
 *
 * <p>The listing runs as a {@link PeriodicTask}: its pause is the poll interval, ended early by a commit
 * ({@link PeriodicTask#wake()}); a failed round is retried after a backoff of at most {@link #FAILURE_BACKOFF}.
 */
@Component
public class WebhookDispatcher extends PeriodicTask {
    private static final Logger log = LoggerFactory.getLogger(WebhookDispatcher.class);
    static final int BATCH = 50;
    static final Duration STOP_GRACE = Duration.ofSeconds(3);
    /** The longest pause after a failed round (the database away). */
    static final Duration FAILURE_BACKOFF = Duration.ofSeconds(1);
    /** A delivery to the deployment's endpoint while it has no secret and unsigned requests are not allowed. */
    static final WebhookSender.Result UNSIGNED_REFUSED = WebhookSender.Result.failed(
            "SETTLE_WEBHOOK_SECRET is not "
                    + "set and SETTLE_WEBHOOK_ALLOWUNSIGNED is false: webhooks are not sent unsigned; not sent",
            0,
            false);

    private final DeliveryQueue queue;
    private final WebhookSender sender;
    private final RetrySchedule schedule;
    private final AgentSettings.Webhook settings;
    private final String defaultUrl;
    private final LongAdder claimed = new LongAdder();
    /** Deliveries this instance is claiming or sending, so that the next poll does not start them twice. */
    private final Set<Long> inFlight = ConcurrentHashMap.newKeySet();
    /** Sessions with an attempt in flight here → a later delivery of the session waits for it. */
    private final Map<Long, Boolean> sending = new ConcurrentHashMap<>();

    private volatile ExecutorService attempts;
    /** Set while stopping: a round in progress starts nothing more and does not wait. */
    private volatile boolean stopping;

    private final MeterRegistry meters;

    public WebhookDispatcher(
            DeliveryQueue queue,
            WebhookSender sender,
            RetrySchedule schedule,
            DefaultEndpoint defaultEndpoint,
            AgentSettings settings,
            MeterRegistry meters) {
        super("webhook-dispatcher", FAILURE_BACKOFF);
        this.meters = meters;
        this.queue = queue;
        this.sender = sender;
        this.schedule = schedule;
        this.settings = settings.webhook();
        this.defaultUrl = defaultEndpoint.url();
    }

    @Override
    public synchronized void start() {
        if (isRunning()) {
            return;
        }
        stopping = false;
        attempts = Executors.newVirtualThreadPerTaskExecutor();
        super.start();
    }

    @Override
    protected Duration firstDelay() {
        return Duration.ZERO;
    }

    /**
     * Lists due deliveries and starts each; then sleeps until the next one is due, at most the poll interval (ended
     * early by {@link #wake()}), unless the batch was full.
     */
    @Override
    protected Duration round() {
        ExecutorService executor = attempts;
        if (stopping || executor == null) {
            return Duration.ZERO;
        }
        DeliveryQueue.Due due = queue.due(BATCH, defaultUrl);
        List<Long> ids = new ArrayList<>(due.ids());
        Collections.shuffle(ids);
        int started = 0;
        for (long id : ids) {
            if (inFlight.add(id)) {
                started++;
                executor.execute(() -> claimAndAttempt(id));
            }
        }
        if (ids.size() == BATCH && started > 0) {
            return Duration.ZERO; // a full batch that started new work: list again at once
        }
        return untilDue(due.nextDueMicros(), settings.pollInterval());
    }

    /**
     * After the commit that wrote a delivery: send its first attempt if the outbox claimed it for this instance
     * (stopping: its claim expires and it is retried), else list at once, and again when an attempt of its session
     * in flight here ends (the delivery waits for it).
     */
    @TransactionalEventListener(phase = TransactionPhase.AFTER_COMMIT, fallbackExecution = true)
    public void onOutboxWritten(OutboxWritten written) {
        DeliveryQueue.Claim claim = written.claim();
        ExecutorService executor = attempts;
        if (claim == null || stopping || executor == null) {
            sending.computeIfPresent(written.sessionId(), (session, followed) -> true);
            wake(); // one round answers every commit so far
            return;
        }
        inFlight.add(claim.id());
        claimed.increment();
        try {
            executor.execute(() -> {
                try {
                    attempt(claim);
                } finally {
                    inFlight.remove(claim.id());
                }
            });
        } catch (java.util.concurrent.RejectedExecutionException stopped) {
            inFlight.remove(claim.id()); // its claim expires and another round sends it
        }
    }

    private void claimAndAttempt(long id) {
        try {
            DeliveryQueue.Claim claim = queue.claim(id, settings.timeout().plus(settings.claimMargin()), defaultUrl);
            if (claim != null) {
                claimed.increment();
                attempt(claim);
            }
        } catch (RuntimeException e) {
            log.warn("webhook delivery {}: claim failed ({})", id, e.toString());
        } finally {
            inFlight.remove(id);
        }
    }

    void attempt(DeliveryQueue.Claim claim) {
        sending.merge(claim.sessionId(), claim.followed(), Boolean::logicalOr);
        AttemptVerdict verdict = null;
        try {
            verdict = sendAndRecord(claim);
        } finally {
            boolean followed = Boolean.TRUE.equals(sending.remove(claim.sessionId()));
            if (verdict instanceof AttemptVerdict.Retry
                    || (followed
                            && (verdict instanceof AttemptVerdict.Delivered
                                    || verdict instanceof AttemptVerdict.Failed))) {
                wake(); // the retry's due time, or the session's next delivery, is for the next listing
            }
        }
    }

    /** @return the verdict recorded, or null when it could not be (the claim expires and another round retries) */
    private AttemptVerdict sendAndRecord(DeliveryQueue.Claim claim) {
        try {
            Integer status;
            long latencyMicros;
            String attemptError;
            AttemptVerdict verdict;
            if (claim.endpointDisabled() && !claim.operatorRound()) {
                status = null;
                latencyMicros = 0;
                attemptError =
                        "endpoint disabled since " + claim.disabledAt() + " (" + claim.disabledReason() + "); not sent";
                verdict = new AttemptVerdict.Failed(null, attemptError, false);
            } else {
                WebhookSender.Result result =
                        claim.owner() == null && !sender.signsForDeployment() && !settings.allowunsigned()
                                ? UNSIGNED_REFUSED
                                : sender.send(
                                        claim.endpointUrl(),
                                        claim.webhookId(),
                                        claim.timestamp(),
                                        claim.payload(),
                                        claim.owner(),
                                        claim.secrets());
                if (result.interrupted()) {
                    Thread.interrupted(); // record the hand-back before the thread ends
                }
                status = result.status();
                latencyMicros = result.latencyMicros();
                attemptError = result.ok() ? null : AttemptVerdict.describe(result);
                verdict = AttemptVerdict.of(
                        result, claim.attemptInRound(), schedule, settings.maxRetryAfter(), Instant.now());
            }
            boolean ours = queue.finish(claim, status, latencyMicros, attemptError, verdict);
            meters.timer("settle.webhook.attempts", "outcome", outcome(verdict, status))
                    .record(Duration.ofNanos(latencyMicros * 1000));
            if (!ours) {
                log.info(
                        "webhook {} attempt {}: the claim expired before its outcome was recorded; another "
                                + "dispatcher owns the delivery now",
                        claim.webhookId(),
                        claim.attempt());
            } else if (verdict instanceof AttemptVerdict.Failed f) {
                log.warn("webhook {} FAILED after attempt {}: {}", claim.webhookId(), claim.attempt(), f.error());
            }
            return verdict;
        } catch (RuntimeException e) {
            log.warn(
                    "webhook {}: could not record attempt {} ({}); its claim expires and it is retried",
                    claim.webhookId(),
                    claim.attempt(),
                    e.toString());
            return null;
        }
    }

    /** delivered, retry (will be tried again), failed (dead letter) or released (handed back at shutdown). */
    private static String outcome(AttemptVerdict verdict, Integer status) {
        return switch (verdict) {
            case AttemptVerdict.Delivered d -> "delivered";
            case AttemptVerdict.Retry r -> "retry";
            case AttemptVerdict.Failed f -> "failed";
            case AttemptVerdict.Released r -> "released";
        };
    }

    @Override
    public synchronized void stop() {
        ExecutorService executor = attempts;
        if (executor == null) {
            return;
        }
        stopping = true;
        super.stop();
        attempts = null;
        try {
            executor.shutdown();
            if (!executor.awaitTermination(STOP_GRACE.toMillis(), TimeUnit.MILLISECONDS)) {
                executor.shutdownNow(); // interrupted attempts hand their claims back
                executor.awaitTermination(5, TimeUnit.SECONDS);
            }
        } catch (InterruptedException e) {
            executor.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    /** Attempts this instance has claimed since it was created. */
    public long claimedAttempts() {
        return claimed.sum();
    }
}
