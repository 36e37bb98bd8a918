package dev.settle.agent.stream;

import dev.settle.agent.AgentSettings;
import dev.settle.agent.lease.LeaseLostException;
import dev.settle.agent.lease.SessionLease;
import dev.settle.schema.SessionEvents;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.json.JsonMapper;

import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The "nothing streamed is lost" promise (docs/PROMISES.md): the deltas of one turn, persisted as numbered
 * chunks (reply.delta events keyed by turn + seq, each written exactly once), in batches by count and by time.
 *
 * <p>No buffer is ever cleared (clearing a shared buffer after draining it drops what arrived in between): the
 * model thread numbers each delta and puts it on a queue; one writer thread takes each chunk off the queue
 * exactly once into a batch of its own, writes the batch, and drops it. {@link #finish()} writes what is left, waits for the writer, and returns the persisted text read
 * back from the database, which the caller compares with the model's text before committing.
 */
public final class TurnStream implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(TurnStream.class);
    private static final Chunk END = new Chunk(-1, "");

    record Chunk(int seq, String text) {}

    static final String PERSISTED = """
            SELECT data FROM session_event
             WHERE session_id = ? AND turn_id = ? AND type = 'reply.delta' ORDER BY chunk_seq""";
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final LinkedBlockingQueue<Chunk> queue = new LinkedBlockingQueue<>();
    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final SessionLease.Lease lease;
    private final long turnId;
    private final AgentSettings.Stream settings;
    private final Thread writer;
    private int nextSeq;
    private volatile boolean leaseLost;
    private volatile RuntimeException failure;

    TurnStream(
            JdbcTemplate jdbc,
            TransactionTemplate tx,
            SessionLease.Lease lease,
            long turnId,
            AgentSettings.Stream settings) {
        this.jdbc = jdbc;
        this.tx = tx;
        this.lease = lease;
        this.turnId = turnId;
        this.settings = settings;
        this.writer = Thread.ofVirtual().name("turn-stream-" + turnId).start(this::write);
    }

    /** Called by the model's stream, in order. */
    public void delta(String text) {
        if (!text.isEmpty()) {
            queue.add(new Chunk(++nextSeq, text));
        }
    }

    /** Writes what is left and returns the text persisted for this turn. */
    public String finish() {
        queue.add(END);
        try {
            writer.join();
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
        StringBuilder persisted = new StringBuilder();
        for (String data : jdbc.queryForList(PERSISTED, String.class, lease.sessionId(), turnId)) {
            persisted.append(JSON.readTree(data).get("text").asString());
        }
        return persisted.toString();
    }

    private void write() {
        long interval = settings.flushInterval().toNanos();
        try {
            while (true) {
                Chunk first = queue.take();
                if (first == END) {
                    return;
                }
                List<Chunk> batch = new ArrayList<>();
                batch.add(first);
                long deadline = System.nanoTime() + interval;
                boolean end = false;
                while (batch.size() < settings.batchSize()) {
                    Chunk next = queue.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
                    if (next == null) {
                        break;
                    }
                    if (next == END) {
                        end = true;
                        break;
                    }
                    batch.add(next);
                }
                flush(batch);
                if (end || leaseLost) {
                    return;
                }
            }
        } catch (java.lang.InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            log.error("turn {}: persisting streamed chunks failed", turnId, e);
            failure = e;
        }
    }

    private void flush(List<Chunk> batch) throws java.lang.InterruptedException {
        Duration delay = settings.flushDelay();
        if (!delay.isZero()) {
            Thread.sleep(delay);
        }
        List<SessionEvents.Event> events = new ArrayList<>(batch.size());
        for (Chunk c : batch) {
            Map<String, Object> data = new LinkedHashMap<>();
            data.put("turnId", turnId);
            data.put("seq", c.seq());
            data.put("text", c.text());
            events.add(new SessionEvents.Event("reply.delta", turnId, c.seq(), data));
        }
        Boolean written = tx.execute(status -> SessionEvents.append(jdbc, lease.sessionId(), lease.token(), events));
        if (!Boolean.TRUE.equals(written)) {
            leaseLost = true;
        }
    }

    @Override
    public void close() {
        if (writer.isAlive()) {
            queue.add(END);
        }
    }
}
