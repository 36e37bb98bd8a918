package dev.settle.ingest.views;

import dev.settle.ingest.IngestSettings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.SmartLifecycle;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.LockSupport;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The one poller of this ingest instance's open event streams: each stream registers a {@link Watch} of its session
 * and blocks its own (virtual) thread until the poller reports news; the poller alone looks at the database while the
 * streams are idle. The cost of idle streams is therefore one statement per poll interval per {@value #CHUNK}
 * watched sessions, however many streams watch them, reading at most {@value #BUCKETS} rows, and nothing at all
 * while no stream is open.
 *
 * <p>Each round, every {@code settle.events.poll-interval} after the previous one ended:
 *
 * <ol>
 *   <li>{@link #SUMS}: per bucket of the watched sessions (their primary key modulo {@value #BUCKETS}), the count of
 *       their rows and the sum of their {@code event_seq}. {@code SessionEvents} bumps {@code event_seq} in the
 *       transaction that inserts the events, so a committed value N means events up to seq N are committed and
 *       readable. It only grows, so a bucket whose count and sum are those of the seqs its watches saw has no news
 *       (a missing row changes the count); a bucket holding a watch that saw nothing yet has news.</li>
 *   <li>{@link #SEQS}, only when some bucket has news: the {@code event_seq} of that bucket's sessions, by primary
 *       key; a watch whose value grew is woken, and its stream reads its new rows itself
 *       ({@link EventStream#AFTER}).</li>
 *   <li>{@link #FIND}: the sessions that streams wait for because their id was not used yet, by the tenant's unique
 *       key {@code (tenant_id, external_id)}; a watch whose session appeared gets its primary key and is woken.
 *       Another tenant's session of the same id never matches.</li>
 * </ol>
 *
 * <p>A failed round ends every stream watching at that moment with the error (its client reconnects with
 * {@code Last-Event-ID}). Stopping the application ends every open stream normally, before the web server's
 * graceful shutdown waits for open requests.
 */
@Component
class EventPoller implements SmartLifecycle {
    /**
     * The buckets of {@link #SUMS}: an idle round reads at most this many rows per statement, and news of one session
     * has {@link #SEQS} read about 1/{@value} of the chunk's sessions.
     */
    static final int BUCKETS = 32;

    /**
     * {@code (?)} stands for the primary keys of the chunk's sessions, written into the text. The sum is cast to a
     * BIGINT (a SUM is a DECIMAL), which the driver reads as a number without a BigDecimal per row.
     */
    static final String SUMS = "SELECT MOD(id, " + BUCKETS + "), COUNT(*), CAST(SUM(event_seq) AS SIGNED)"
            + " FROM chat_session WHERE id IN (?) GROUP BY MOD(id, " + BUCKETS + ")";

    /** {@code (?)} stands for the primary keys of the sessions of the buckets with news, written into the text. */
    static final String SEQS = "SELECT id, event_seq FROM chat_session WHERE id IN (?)";

    /** The condition is repeated, joined by OR, once per (tenant, id) in the chunk: a range on the unique key. */
    static final String FIND = """
            SELECT id, tenant_id, external_id, event_seq FROM chat_session
             WHERE (tenant_id = ? AND external_id = ?)""";

    /** Sessions asked about per statement. */
    static final int CHUNK = 1000;

    private static final Logger log = LoggerFactory.getLogger(EventPoller.class);

    private final JdbcTemplate jdbc;
    private final Duration interval;
    private final Set<Watch> watches = ConcurrentHashMap.newKeySet();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition watched = lock.newCondition();
    /** Counts the changes of the set of watches (and of their sessions' keys): a new count means a new plan. */
    private final AtomicLong changes = new AtomicLong();

    private volatile boolean running;
    private Thread thread;
    private Plan plan;
    private long plannedAt;

    public EventPoller(JdbcTemplate jdbc, IngestSettings settings) {
        this.jdbc = jdbc;
        this.interval = settings.events().pollInterval();
    }

    /**
     * What the poller knows of one stream's session, and the stream's thread to wake when that changes. Only the
     * poller writes it; only the stream's thread waits on it.
     */
    static final class Watch {
        final String tenant;
        final String sessionId;
        private final Thread thread;
        private volatile Long pk;
        private volatile long committed = -1;
        private volatile RuntimeException failure;
        private volatile boolean ended;

        private Watch(String tenant, String sessionId, Long pk, Thread thread) {
            this.tenant = tenant;
            this.sessionId = sessionId;
            this.pk = pk;
            this.thread = thread;
        }

        /** @return the session's primary key, null while the tenant has no session of that id */
        Long pk() {
            return pk;
        }

        /** @return the highest event seq the poller saw committed, -1 before its first look */
        long committed() {
            return committed;
        }

        /**
         * @return false once the application stops (the stream ends normally)
         * @throws RuntimeException the error of the poller's round, which ends the stream
         */
        boolean live() {
            RuntimeException e = failure;
            if (e != null) {
                throw new IllegalStateException("the event poll failed: " + e.getMessage(), e);
            }
            return !ended;
        }

        /** Blocks the stream's thread until the poller reports news, the deadline passes or it is interrupted. */
        void await(long deadlineNanos) {
            long left = deadlineNanos - System.nanoTime();
            if (left > 0) {
                LockSupport.parkNanos(this, left);
            }
        }

        private void saw(long seq) {
            if (seq > committed) {
                committed = seq;
                LockSupport.unpark(thread);
            }
        }

        private void found(long id, long seq) {
            committed = seq;
            pk = id;
            LockSupport.unpark(thread);
        }

        private void fail(RuntimeException e) {
            failure = e;
            LockSupport.unpark(thread);
        }

        private void end() {
            ended = true;
            LockSupport.unpark(thread);
        }
    }

    /** Watches the session for the calling thread, which {@link Watch#await}s; {@link #unwatch} when the stream ends. */
    Watch watch(String tenant, String sessionId, Long pk) {
        Watch w = new Watch(tenant, sessionId, pk, Thread.currentThread());
        watches.add(w);
        changes.incrementAndGet();
        if (!running) {
            w.end();
        }
        lock.lock();
        try {
            watched.signal();
        } finally {
            lock.unlock();
        }
        return w;
    }

    void unwatch(Watch w) {
        watches.remove(w);
        changes.incrementAndGet();
    }

    private void run() {
        while (running) {
            lock.lock();
            try {
                while (running && watches.isEmpty()) {
                    watched.await();
                }
            } catch (InterruptedException e) {
                return;
            } finally {
                lock.unlock();
            }
            try {
                round();
            } catch (RuntimeException e) {
                List<Watch> failed = List.copyOf(watches);
                log.warn(
                        "event poll failed; {} open event streams end (clients reconnect): {}",
                        failed.size(),
                        e.toString());
                failed.forEach(w -> w.fail(e));
            }
            try {
                Thread.sleep(interval);
            } catch (InterruptedException e) {
                return;
            }
        }
    }

    private record Key(String tenant, String sessionId) {}

    /** The statements of a round and the watches their rows concern, kept while the set of watches is unchanged. */
    private record Plan(List<Chunk> chunks, Map<Long, Watch[]> byPk, List<List<Key>> finds, Map<Key, Watch[]> byKey) {}

    /**
     * The sessions of one {@link #SUMS} statement by bucket, with their watches, its text (an unchanged set of watches
     * re-sends it as is), and per bucket the count and sum its row has while the bucket has no news. Only the poller's
     * thread uses it: an idle round compares the summary's rows with these figures and touches nothing else.
     */
    private static final class Chunk {
        final String sums;
        final long[][] pks = new long[BUCKETS][];
        final Watch[][][] watches = new Watch[BUCKETS][][];
        final long[] count = new long[BUCKETS];
        final long[] sum = new long[BUCKETS];
        /** a watch of the bucket saw nothing yet: the bucket has news */
        final boolean[] unseen = new boolean[BUCKETS];

        Chunk(long[] chunk, Map<Long, Watch[]> byPk) {
            sums = SUMS.replace("(?)", ids(chunk));
            int[] sizes = new int[BUCKETS];
            for (long pk : chunk) {
                sizes[bucket(pk)]++;
            }
            for (int b = 0; b < BUCKETS; b++) {
                pks[b] = new long[sizes[b]];
                watches[b] = new Watch[sizes[b]][];
            }
            int[] filled = new int[BUCKETS];
            for (long pk : chunk) {
                int b = bucket(pk);
                pks[b][filled[b]] = pk;
                watches[b][filled[b]++] = byPk.get(pk);
            }
            for (int b = 0; b < BUCKETS; b++) {
                expect(b);
            }
        }

        /** The bucket of a session in {@link #SUMS}: {@code MOD(id, BUCKETS)} (keys are positive). */
        static int bucket(long pk) {
            return (int) (pk % BUCKETS);
        }

        /**
         * Writes down bucket {@code b}'s row while its watches have seen every seq: for each session, the lowest seq
         * its watches saw.
         */
        void expect(int b) {
            count[b] = pks[b].length;
            sum[b] = 0;
            unseen[b] = false;
            for (Watch[] session : watches[b]) {
                long seen = Long.MAX_VALUE;
                for (Watch w : session) {
                    seen = Math.min(seen, w.committed);
                }
                if (seen < 0) {
                    unseen[b] = true;
                } else {
                    sum[b] += seen;
                }
            }
        }
    }

    /** One look at every watched session. */
    private void round() {
        long now = changes.get();
        if (plan == null || now != plannedAt) {
            plan = plan();
            plannedAt = now;
        }
        Map<Long, Watch[]> byPk = plan.byPk();
        for (Chunk chunk : plan.chunks()) {
            boolean[] same = new boolean[BUCKETS];
            jdbc.query(chunk.sums, rs -> {
                int b = rs.getInt(1);
                same[b] = !chunk.unseen[b] && rs.getLong(2) == chunk.count[b] && rs.getLong(3) == chunk.sum[b];
            });
            StringBuilder news = null;
            for (int b = 0; b < BUCKETS; b++) {
                if (!same[b] && chunk.pks[b].length > 0) {
                    news = ids(news, chunk.pks[b]);
                }
            }
            if (news != null) {
                jdbc.query(SEQS.replace("(?)", news.append(')')), rs -> {
                    long seq = rs.getLong(2);
                    for (Watch w : byPk.get(rs.getLong(1))) {
                        w.saw(seq);
                    }
                });
                for (int b = 0; b < BUCKETS; b++) {
                    if (!same[b]) {
                        chunk.expect(b);
                    }
                }
            }
        }
        String term = FIND.substring(FIND.indexOf("(tenant_id"));
        for (List<Key> chunk : plan.finds()) {
            jdbc.query(
                    FIND + (" OR " + term).repeat(chunk.size() - 1),
                    ps -> {
                        for (int i = 0; i < chunk.size(); i++) {
                            ps.setString(2 * i + 1, chunk.get(i).tenant());
                            ps.setString(2 * i + 2, chunk.get(i).sessionId());
                        }
                    },
                    rs -> {
                        Watch[] found = plan.byKey().get(new Key(rs.getString(2), rs.getString(3)));
                        if (found != null) {
                            for (Watch w : found) {
                                w.found(rs.getLong(1), rs.getLong(4));
                            }
                            changes.incrementAndGet();
                        }
                    });
        }
    }

    /** The primary keys, as the text of an IN list: {@code (1,2,3)}. */
    private static String ids(long[] pks) {
        return ids(null, pks).append(')').toString();
    }

    /** Appends the primary keys to an IN list's text (null: a new one), which the caller closes. */
    private static StringBuilder ids(StringBuilder list, long[] pks) {
        StringBuilder ids = list != null ? list : new StringBuilder(pks.length * 8).append('(');
        for (long pk : pks) {
            ids.append(ids.length() > 1 ? "," : "").append(pk);
        }
        return ids;
    }

    /** Groups the watches by session, and the sessions into statements of {@value #CHUNK}. */
    private Plan plan() {
        Map<Long, List<Watch>> byPk = new HashMap<>();
        Map<Key, List<Watch>> byKey = new HashMap<>();
        for (Watch w : watches) {
            Long pk = w.pk;
            if (pk != null) {
                byPk.computeIfAbsent(pk, k -> new ArrayList<>(1)).add(w);
            } else {
                byKey.computeIfAbsent(new Key(w.tenant, w.sessionId), k -> new ArrayList<>(1))
                        .add(w);
            }
        }
        Map<Long, Watch[]> pkWatches = new HashMap<>();
        byPk.forEach((pk, ws) -> pkWatches.put(pk, ws.toArray(Watch[]::new)));
        List<Chunk> chunks = new ArrayList<>();
        long[] pks = byPk.keySet().stream().mapToLong(Long::longValue).toArray();
        for (int from = 0; from < pks.length; from += CHUNK) {
            chunks.add(new Chunk(Arrays.copyOfRange(pks, from, Math.min(pks.length, from + CHUNK)), pkWatches));
        }
        List<Key> keys = new ArrayList<>(byKey.keySet());
        List<List<Key>> finds = new ArrayList<>();
        for (int from = 0; from < keys.size(); from += CHUNK) {
            finds.add(List.copyOf(keys.subList(from, Math.min(keys.size(), from + CHUNK))));
        }
        Map<Key, Watch[]> keyWatches = new HashMap<>();
        byKey.forEach((key, ws) -> keyWatches.put(key, ws.toArray(Watch[]::new)));
        return new Plan(chunks, pkWatches, finds, keyWatches);
    }

    @Override
    public void start() {
        running = true;
        thread = Thread.ofPlatform().name("settle-event-poller").daemon(true).start(this::run);
    }

    @Override
    public void stop() {
        running = false;
        thread.interrupt();
        try {
            thread.join(5_000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        watches.forEach(Watch::end);
    }

    @Override
    public boolean isRunning() {
        return running;
    }
}
