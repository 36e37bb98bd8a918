package dev.settle.ingest.accept;

import dev.settle.ingest.http.ApiProblem;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Group commit of accepts ({@code settle.ingest.group-commit}): messages that arrive while others are being written are
 * committed together in one batch ({@link BatchAcceptance}, at most {@code group-commit-max} messages), and every
 * request answers after the commit that holds its message.
 *
 * <p>Leaders and followers, no committer thread and no waiting for company. Requests queue in arrival order, and a
 * request starts as soon as the rule below lets it, on its own thread (or on the thread of the oldest request of its
 * batch):
 * <ul>
 *   <li><b>Alone</b>: while no batch is writing and the queue is no longer than the free lanes ({@value #LANES} in all),
 *       each queued request writes alone, at once, by the one-message path's transaction ({@link MessageAcceptance}),
 *       beside the others writing alone: what an instance without group commit does, at moderate load.</li>
 *   <li><b>Together</b>: when more are queued than lanes are free and no batch is writing, the queue goes as one batch,
 *       beside the requests writing alone but without their sessions: a queued request whose session is being written
 *       alone stays queued, in its place, until that writer is done. Under load, one transaction holds many
 *       messages.</li>
 *   <li><b>Stalled</b>: when nothing has started for {@link #STALL} (a batch of one, which the one-message path
 *       writes, waits for a row another transaction holds, or the process is starved), the whole queue goes alone at once, each request in a lane of its own
 *       beyond the {@value #LANES}: a stuck writer delays the messages queued behind it by at most that long, not
 *       until it is unstuck ({@value #STALLS} counts these releases). A batch of several waits for no session row another
 *       writer holds: it leaves that session's requests out, and they go alone ({@link BatchAcceptance}).</li>
 * </ul>
 * A transaction "writes" until it has sent its last statement; its COMMIT overlaps what starts next, and a transaction
 * in its commit waits for nothing. Why the writers that run side by side cannot deadlock: a batch waits for no row
 * another writer holds (it locks the free rows of its existing sessions without waiting, and creates its new sessions,
 * in key order, waiting only for one created meanwhile); a message alone takes its one session row by its first
 * statement and then touches only rows of that session; and no two writers side by side share a session, except
 * messages alone (one waits for the other's row, a chain, not a cycle). Two batches creating sessions could (a
 * multi-row upsert takes next-key locks on the session key index, and two such can each wait for the other), so only
 * one writes at a time. A release after a stall may write beside a batch of its own session; InnoDB resolves such a
 * deadlock, and its loser is accepted again (below). A session's versions and message times rise in the order its writers get its row
 * ({@link MessageTimes}).
 *
 * <p>A batch that fails as a whole (a deadlock, a lost connection, a lost commit acknowledgement) is not retried as a
 * batch: each of its requests is accepted alone ({@link MessageAcceptance}'s one-message path) on its own thread,
 * starting from an unknown outcome, so it first looks its message up by the id chosen before the batch.
 */
final class GroupCommit {
    static final String BATCH_SIZE = "settle.accept.batch.size";
    static final String BATCH_FAILURES = "settle.accept.batch.failures";
    static final String STALLS = "settle.accept.batch.stalls";
    /** Requests that may write alone at once, side by side. */
    static final int LANES = 4;
    /** A queue that saw nothing start for this long goes alone (the rule "Stalled" above). */
    static final Duration STALL = Duration.ofMillis(200);

    private static final Logger log = LoggerFactory.getLogger(GroupCommit.class);

    /** What a queued request is told. */
    sealed interface Signal {}

    /** Lead the next batch: it starts with this request. */
    record Lead() implements Signal {}

    /** Committed, or answered from a stored message ({@code replay}). */
    record Done(MessageAcceptance.Accepted accepted) implements Signal {}

    /** Refused alone (422, 429, 409); nothing of it was stored. */
    record Refused(ApiProblem problem) implements Signal {}

    /**
     * Accept alone: the batch failed ({@code cause}; the outcome is unknown), or left the message out, nothing of it
     * stored (its session's row was held by another writer; {@code cause} null).
     */
    record Alone(RuntimeException cause) implements Signal {}

    private static final Signal LEAD = new Lead();

    /** A session, as a queued request names it. */
    private record SessionKey(String tenant, String sessionId) {
        static SessionKey of(BatchAcceptance.Item item) {
            return new SessionKey(item.tenant(), item.request().sessionId());
        }
    }

    private static final class Pending {
        final BatchAcceptance.Item item;
        final SessionKey session;
        final CompletableFuture<Signal> signal = new CompletableFuture<>();
        /** The batch this request leads, set before it is told {@link Lead}. */
        volatile List<Pending> batch;
        /** It leads a batch of one in a lane of its own (not a batch that writes by itself). */
        boolean inLane;

        Pending(BatchAcceptance.Item item) {
            this.item = item;
            this.session = SessionKey.of(item);
        }
    }

    private final BatchAcceptance batches;
    private final Single alone;

    /** A batch of one: the one-message path's first attempt, which runs {@code written} before its commit. */
    @FunctionalInterface
    interface Single {
        /** @throws RuntimeException a failure of the attempt (its outcome unknown) */
        BatchAcceptance.Outcome accept(BatchAcceptance.Item item, Runnable written);
    }

    private final int max;
    private final DistributionSummary sizes;
    private final Counter failures;
    private final Counter stalls;

    private final ReentrantLock lock = new ReentrantLock();
    private final ArrayDeque<Pending> queue = new ArrayDeque<>();
    /** Requests writing alone now (sending statements, not yet committing). */
    private int writingAlone;
    /** The sessions of the requests writing alone, with how many of each. */
    private final Map<SessionKey, Integer> sessionsAlone = new HashMap<>();
    /** A batch is sending its statements. */
    private boolean batchWriting;
    /** When a request or batch last started to write (System.nanoTime). */
    private long lastStart = System.nanoTime();

    /** @param alone a batch of one: the one-message path's first attempt (a failure is thrown) */
    GroupCommit(BatchAcceptance batches, Single alone, int max, MeterRegistry meters) {
        this.batches = batches;
        this.alone = alone;
        this.max = max;
        this.sizes = DistributionSummary.builder(BATCH_SIZE)
                .description("messages per group commit")
                .register(meters);
        this.failures = Counter.builder(BATCH_FAILURES)
                .description("group commits that failed as a whole; their messages were accepted alone")
                .register(meters);
        this.stalls = Counter.builder(STALLS)
                .description("queues that saw nothing start for " + STALL.toMillis() + " ms and went alone")
                .register(meters);
    }

    /** Queues the message and returns what its batch decided, after that batch committed (or failed). */
    Signal submit(BatchAcceptance.Item item) {
        Pending me = new Pending(item);
        List<List<Pending>> starts;
        lock.lock();
        try {
            queue.addLast(me);
            starts = startable();
        } finally {
            lock.unlock();
        }
        start(starts, me);
        boolean interrupted = false;
        try {
            while (me.batch == null) { // not (yet) a leader: told to lead, or the outcome of the batch that held it
                try {
                    Signal told = me.signal.get(STALL.toNanos(), TimeUnit.NANOSECONDS);
                    if (!(told instanceof Lead)) {
                        return told;
                    }
                } catch (TimeoutException e) {
                    start(releaseIfStalled(), me);
                } catch (InterruptedException e) {
                    interrupted = true; // a queued request is answered by whoever takes it: keep waiting
                } catch (ExecutionException e) {
                    throw new IllegalStateException("a group commit signal failed", e.getCause());
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
        return lead(me.batch);
    }

    /**
     * Under the lock: when nothing has started for {@link #STALL}, takes the whole queue, each request to write alone
     * in a lane of its own.
     */
    private List<List<Pending>> releaseIfStalled() {
        lock.lock();
        try {
            long now = System.nanoTime();
            if (queue.isEmpty() || now - lastStart < STALL.toNanos()) {
                return List.of();
            }
            List<List<Pending>> starts = new ArrayList<>(queue.size());
            while (!queue.isEmpty()) {
                starts.add(List.of(alone(queue.pollFirst())));
            }
            lastStart = now;
            stalls.increment();
            return starts;
        } finally {
            lock.unlock();
        }
    }

    /**
     * Under the lock: takes from the queue what may start now (the rule in the class comment) and counts it as
     * writing.
     */
    private List<List<Pending>> startable() {
        List<List<Pending>> starts = List.of();
        while (!queue.isEmpty() && !batchWriting) {
            List<Pending> batch;
            if (queue.size() <= LANES - writingAlone) {
                batch = List.of(alone(queue.pollFirst()));
            } else {
                batch = new ArrayList<>(Math.min(max, 16));
                for (Iterator<Pending> it = queue.iterator(); it.hasNext() && batch.size() < max; ) {
                    Pending next = it.next();
                    if (!sessionsAlone.containsKey(next.session)) {
                        it.remove();
                        batch.add(next);
                    }
                }
                if (batch.isEmpty()) {
                    break;
                }
                batchWriting = true;
            }
            if (starts.isEmpty()) {
                starts = new ArrayList<>(2);
                lastStart = System.nanoTime();
            }
            starts.add(batch);
        }
        return starts;
    }

    /** Under the lock: counts {@code p} as writing alone. */
    private Pending alone(Pending p) {
        p.inLane = true;
        writingAlone++;
        sessionsAlone.merge(p.session, 1, Integer::sum);
        return p;
    }

    /** Outside the lock: hands each batch to its oldest request; the caller's own is only marked. */
    private static void start(List<List<Pending>> starts, Pending caller) {
        for (List<Pending> batch : starts) {
            Pending first = batch.getFirst();
            first.batch = batch;
            if (first != caller) {
                first.signal.complete(LEAD);
            }
        }
    }

    /** Runs {@code batch}, whose oldest request is the caller's. */
    private Signal lead(List<Pending> batch) {
        Pending first = batch.getFirst();
        boolean[] done = {false};
        Runnable written = () -> {
            if (!done[0]) {
                done[0] = true;
                written(first);
            }
        };
        Signal[] told = new Signal[batch.size()];
        try {
            List<BatchAcceptance.Item> items = new ArrayList<>(batch.size());
            for (Pending p : batch) {
                items.add(p.item);
            }
            sizes.record(items.size());
            List<BatchAcceptance.Outcome> outcomes = items.size() == 1
                    ? List.of(alone.accept(items.getFirst(), written))
                    : batches.acceptAll(items, written);
            for (int i = 0; i < told.length; i++) {
                BatchAcceptance.Outcome o = outcomes.get(i);
                told[i] = o.alone()
                        ? new Alone(null)
                        : o.refused() != null ? new Refused(o.refused()) : new Done(o.accepted());
            }
        } catch (RuntimeException failed) {
            failures.increment();
            log.info(
                    "a group commit of {} messages failed, each is accepted alone: {}",
                    batch.size(),
                    failed.toString());
            java.util.Arrays.fill(told, new Alone(failed));
        } finally {
            written.run(); // a batch that wrote nothing, was refused or failed ends its writing here
            for (int i = 1; i < told.length; i++) {
                batch.get(i)
                        .signal
                        .complete(
                                told[i] != null
                                        ? told[i]
                                        : new Alone(new IllegalStateException("the batch's leader failed")));
            }
        }
        return told[0];
    }

    /** The batch led by {@code first} has sent its last statement: what it held back may start. */
    private void written(Pending first) {
        List<List<Pending>> starts;
        lock.lock();
        try {
            if (first.inLane) {
                writingAlone--;
                sessionsAlone.computeIfPresent(first.session, (k, n) -> n == 1 ? null : n - 1);
            } else {
                batchWriting = false;
            }
            starts = startable();
        } finally {
            lock.unlock();
        }
        start(starts, null);
    }
}
