package dev.settle.ingest.accept;

import dev.settle.ingest.http.ApiProblem;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.DistributionSummary;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.locks.ReentrantLock;

/**
 * Group commit of accepts ({@code settle.ingest.group-commit}): the messages that arrive while a batch commits are
 * committed together in the next one ({@link BatchAcceptance}, at most {@code group-commit-max} messages), and every
 * request answers after the commit that holds its message.
 *
 * <p>Leader and followers, no committer thread and no waiting for company: a request that finds no batch writing
 * leads at once, on its own thread, a batch of what has queued (itself first), so a request alone is committed at
 * once. Requests that arrive meanwhile queue in arrival order. When the leader's batch has sent its last statement,
 * before its COMMIT, it hands the lead to the oldest queued request, whose batch holds it and up to {@code max - 1}
 * requests after it; after its commit it tells its followers their outcomes. One batch writes at a time, so a batch's
 * statements start after the previous batch's ended (its times and versions come after that batch's); its commit
 * overlaps the next batch's statements. A batch in its commit waits for nothing, so it can never be part of a deadlock
 * with the batch after it, which at worst waits for the commit to release the rows both touch.
 *
 * <p>A batch of one message is the one-message path's transaction ({@link MessageAcceptance}), which takes one
 * statement fewer than a batch's.
 *
 * <p>A batch that fails as a whole (a deadlock, a lost connection, a lost commit acknowledgement) is not retried as a
 * batch: each of its requests is accepted alone ({@link MessageAcceptance}'s one-message path) on its own thread,
 * starting from an unknown outcome, so it first looks its message up by the id chosen before the batch.
 */
final class GroupCommit {
    static final String BATCH_SIZE = "settle.accept.batch.size";
    static final String BATCH_FAILURES = "settle.accept.batch.failures";
    private static final Logger log = LoggerFactory.getLogger(GroupCommit.class);

    /** What a queued request is told. */
    sealed interface Signal {}

    /** Lead the next batch: it starts with this request. */
    record Lead() implements Signal {}

    /** Committed, or answered from a stored message ({@code replay}). */
    record Done(MessageAcceptance.Accepted accepted) implements Signal {}

    /** Refused alone (422, 429, 409); nothing of it was stored. */
    record Refused(ApiProblem problem) implements Signal {}

    /** The batch failed: accept alone, from an unknown outcome. */
    record Alone(RuntimeException cause) implements Signal {}

    private static final Signal LEAD = new Lead();

    private static final class Pending {
        final BatchAcceptance.Item item;
        final CompletableFuture<Signal> signal = new CompletableFuture<>();

        Pending(BatchAcceptance.Item item) {
            this.item = item;
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
    private final ReentrantLock lock = new ReentrantLock();
    private final ArrayDeque<Pending> queue = new ArrayDeque<>();
    /** A leader is taking a batch or sending its statements; when false, the queue is empty. */
    private boolean leading;

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
    }

    /** Queues the message and returns what its batch decided, after that batch committed (or failed). */
    Signal submit(BatchAcceptance.Item item) {
        Pending me = new Pending(item);
        boolean lead;
        lock.lock();
        try {
            queue.addLast(me);
            lead = !leading;
            leading = true;
        } finally {
            lock.unlock();
        }
        if (!lead) {
            Signal told = me.signal.join();
            if (!(told instanceof Lead)) {
                return told;
            }
        }
        return lead();
    }

    /** Runs the batch at the head of the queue (the caller's own request first). */
    private Signal lead() {
        boolean[] handedOff = {false};
        Runnable written = () -> {
            if (!handedOff[0]) {
                handedOff[0] = true;
                handOff();
            }
        };
        List<Pending> batch = new ArrayList<>(Math.min(max, 16));
        lock.lock();
        try {
            while (batch.size() < max && !queue.isEmpty()) {
                batch.add(queue.pollFirst());
            }
        } finally {
            lock.unlock();
        }
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
                told[i] = o.refused() != null ? new Refused(o.refused()) : new Done(o.accepted());
            }
        } catch (RuntimeException failed) {
            failures.increment();
            log.info(
                    "a group commit of {} messages failed, each is accepted alone: {}",
                    batch.size(),
                    failed.toString());
            java.util.Arrays.fill(told, new Alone(failed));
        } finally {
            written.run(); // a batch that wrote nothing, was refused or failed hands off here
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

    private void handOff() {
        Pending next;
        lock.lock();
        try {
            next = queue.peekFirst();
            if (next == null) {
                leading = false;
            }
        } finally {
            lock.unlock();
        }
        if (next != null) {
            next.signal.complete(LEAD);
        }
    }
}
