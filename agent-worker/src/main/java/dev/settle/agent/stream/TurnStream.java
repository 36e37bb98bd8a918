package dev.settle.agent.stream;

import dev.settle.agent.AgentSettings;
import dev.settle.agent.lease.LeaseLostException;
import dev.settle.agent.lease.SessionLease;
import dev.settle.schema.SessionEvents;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The "nothing streamed is lost" promise (docs/PROMISES.md): the deltas of one turn, persisted as numbered
 * chunks (reply.delta events keyed by turn + seq, each written exactly once), in batches by count and by time,
 * after the turn's {@code turn.started} event, which opens the first batch.
 *
 * <p>No buffer is ever cleared (clearing a shared buffer after draining it drops what arrived in between): the
 * model thread numbers each delta and puts it on a queue; one writer thread takes each chunk off the queue
 * exactly once into a batch of its own, writes the batch, and drops it. The stream ends one of two ways:
 * <ul>
 *   <li>{@link #finish()} writes what is left, waits for the writer, and returns the text persisted;</li>
 *   <li>{@link #handOver()} stops the writer after the batch it is writing and hands the events not written yet
 *       to the caller, which writes them in its own transaction (the reply commit), with the count of deltas the
 *       persisted stream must then hold.</li>
 * </ul>
 * The persisted text is what the writer's committed batches held, in seq order: a batch is either committed
 * whole or the stream fails. {@code turn.started} waits for the first delta (or the end, or a {@link #sync()}): a
 * turn that streams nothing before it ends writes it in the end's transaction.
 */
public final class TurnStream implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TurnStream.class);
    private static final Chunk END = new Chunk(-1, "", null, null);
    private static final Chunk HAND_OVER = new Chunk(-1, "", null, null);

    /**
     * A delta (seq ≥ 1), the turn's opening event (seq 0, no text), or a marker (no event): {@link #END},
     * {@link #HAND_OVER}, or a {@link #sync()} request ({@code synced} counted down once everything before it is
     * written).
     */
    record Chunk(int seq, String text, SessionEvents.Event event, CountDownLatch synced) {
        Chunk(int seq, String text, SessionEvents.Event event) {
            this(seq, text, event, null);
        }
    }

    /**
     * What a {@link #handOver()} leaves to the caller.
     *
     * @param events    the events not written yet, in order (the caller appends them)
     * @param deltas    reply.delta rows the turn has once {@code events} are appended
     * @param text      the whole streamed text, written and handed over
     */
    public record Rest(List<SessionEvents.Event> events, int deltas, String text) {}

    private final LinkedBlockingQueue<Chunk> queue = new LinkedBlockingQueue<>();
    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final SessionLease.Lease lease;
    private final long turnId;
    private final AgentSettings.Stream settings;
    /** The longest {@link #close()} waits for the writer to write what is queued. */
    static final Duration CLOSE_WAIT = Duration.ofSeconds(5);

    /** Started by the first delta, {@link #sync()} or end: a turn waiting for its model's first token holds no thread. */
    private volatile Thread writer;

    private int nextSeq;
    /** Written by the writer thread only; read after it ended. */
    private final StringBuilder persisted = new StringBuilder();

    private int deltasWritten;
    private List<Chunk> unwritten = List.of();
    private volatile boolean leaseLost;
    private volatile RuntimeException failure;

    TurnStream(
            JdbcTemplate jdbc,
            TransactionTemplate tx,
            SessionLease.Lease lease,
            long turnId,
            SessionEvents.Event started,
            AgentSettings.Stream settings) {
        this.jdbc = jdbc;
        this.tx = tx;
        this.lease = lease;
        this.turnId = turnId;
        this.settings = settings;
        queue.add(new Chunk(0, "", started));
    }

    /** The writer, started on first use (once). */
    private Thread writer() {
        Thread w = writer;
        if (w != null) {
            return w;
        }
        synchronized (this) {
            if (writer == null) {
                writer = Thread.ofVirtual().name("turn-stream-" + turnId).start(this::write);
            }
            return writer;
        }
    }

    /** Whether the writer thread was started: false until the first delta, sync or end. */
    boolean writing() {
        return writer != null;
    }

    /** Called by the model's stream, in order. */
    public void delta(String text) {
        if (!text.isEmpty()) {
            int seq = ++nextSeq;
            Map<String, Object> data = new LinkedHashMap<>();
            data.put("turnId", turnId);
            data.put("seq", seq);
            data.put("text", text);
            queue.add(new Chunk(seq, text, new SessionEvents.Event("reply.delta", turnId, seq, data)));
            writer();
        }
    }

    /**
     * Returns once everything streamed so far is written (before the turn writes events of its own, such as a tool
     * call's, which must come after them).
     */
    public void sync() {
        CountDownLatch synced = new CountDownLatch(1);
        queue.add(new Chunk(-1, "", null, synced));
        Thread writer = writer();
        awaitWriter(() -> {
            while (!synced.await(100, TimeUnit.MILLISECONDS) && writer.isAlive()) {
                // the writer counts it down, or ends (and releases every sync) on a failure
            }
        });
    }

    /** Writes what is left and returns the text persisted for this turn. */
    public String finish() {
        end(END);
        return persisted.toString();
    }

    /** Stops the writer after its current batch; what it did not write is the caller's to write. */
    public Rest handOver() {
        end(HAND_OVER);
        List<SessionEvents.Event> events = new ArrayList<>();
        StringBuilder text = new StringBuilder(persisted);
        int deltas = deltasWritten;
        for (Chunk c : unwritten) {
            events.add(c.event());
            text.append(c.text());
            deltas += c.seq() > 0 ? 1 : 0;
        }
        for (Chunk c = queue.poll(); c != null; c = queue.poll()) {
            if (c.event() != null) {
                events.add(c.event());
                text.append(c.text());
                deltas += c.seq() > 0 ? 1 : 0;
            }
        }
        return new Rest(events, deltas, text.toString());
    }

    private void end(Chunk how) {
        queue.add(how);
        awaitWriter(writer()::join);
    }

    private interface Wait {
        void await() throws java.lang.InterruptedException;
    }

    /** Waits for the writer as {@code wait} says, then reports how it fared: lease lost or a failed write. */
    private void awaitWriter(Wait wait) {
        try {
            wait.await();
        } catch (java.lang.InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LeaseLostException();
        }
        if (leaseLost) {
            throw new LeaseLostException();
        }
        if (failure != null) {
            throw failure;
        }
    }

    private void write() {
        long interval = settings.flushInterval().toNanos();
        try {
            List<Chunk> batch = new ArrayList<>();
            long deadline = 0;
            while (true) {
                boolean opening = batch.size() == 1 && batch.getFirst().seq() == 0;
                Chunk next = batch.isEmpty() || opening
                        ? queue.take()
                        : queue.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                if (next == HAND_OVER) {
                    unwritten = batch;
                    return;
                }
                if (next == END || (next != null && next.synced() != null)) {
                    flush(batch);
                    if (next == END || leaseLost) {
                        releaseSyncs();
                        return;
                    }
                    next.synced().countDown();
                    batch = new ArrayList<>();
                    continue;
                }
                if (next != null) {
                    if (batch.isEmpty() || opening) {
                        deadline = System.nanoTime() + interval;
                    }
                    batch.add(next);
                }
                if (next == null || batch.size() >= settings.batchSize()) {
                    flush(batch);
                    if (leaseLost) {
                        releaseSyncs();
                        return;
                    }
                    batch = new ArrayList<>();
                }
            }
        } catch (java.lang.InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            log.error("turn {}: persisting streamed chunks failed", turnId, e);
            failure = e;
        }
        releaseSyncs();
    }

    /** The writer is done: nobody waits for a sync it will never reach. */
    private void releaseSyncs() {
        for (Chunk c : queue) {
            if (c.synced() != null) {
                c.synced().countDown();
            }
        }
    }

    private void flush(List<Chunk> batch) throws java.lang.InterruptedException {
        if (batch.isEmpty()) {
            return;
        }
        Duration delay = settings.flushDelay();
        if (!delay.isZero()) {
            Thread.sleep(delay);
        }
        List<SessionEvents.Event> events = new ArrayList<>(batch.size());
        for (Chunk c : batch) {
            events.add(c.event());
        }
        Boolean written = tx.execute(status -> SessionEvents.append(jdbc, lease.sessionId(), lease.token(), events));
        if (!Boolean.TRUE.equals(written)) {
            leaseLost = true;
            return;
        }
        for (Chunk c : batch) {
            persisted.append(c.text());
            deltasWritten += c.seq() > 0 ? 1 : 0;
        }
    }

    /**
     * Ends a turn that stopped without {@link #finish()} or {@link #handOver()} (an exception): the writer writes what
     * is queued and stops, and this waits for it, at most {@link #CLOSE_WAIT}, so that whoever closes the turn next
     * writes after everything of its stream. An interrupted thread (its lease was lost) does not wait: the turn is
     * closed by the next holder, whose lock on the session row fences this writer.
     */
    @Override
    public void close() {
        Thread w = writer();
        if (w.isAlive()) {
            queue.add(END);
            try {
                w.join(CLOSE_WAIT);
            } catch (java.lang.InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }
    }
}
