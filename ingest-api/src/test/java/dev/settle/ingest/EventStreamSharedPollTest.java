package dev.settle.ingest;

import dev.settle.schema.SessionEvents;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
import java.net.http.HttpClient;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Idle event streams share one poll per interval per ingest instance: {@value #STREAMS} open streams cost at most
 * one statement per poll interval (50 ms: 20 a second), which reads a summary of at most {@value #BUCKETS} rows and
 * no session's row while nothing changed, and read no event rows; no streams cost no statement. A delta committed
 * for one of them reaches that stream, and no other, exactly once and in seq order, also across a reconnect with
 * Last-Event-ID and to a second stream of the same session. Statements (and the rows they read) are counted exactly
 * by {@link StatementCounter}; CPU and the delta's latency (commit → the client read it) are printed, not asserted
 * (the machine is shared).
 */
class EventStreamSharedPollTest {
    static final int STREAMS = 1000;
    static final int DELTAS = 100;
    static final Duration WINDOW = Duration.ofSeconds(2);
    static final Duration WITHIN = Duration.ofSeconds(10);
    /** The default poll interval: at most one poll statement per interval. */
    static final long POLLS_PER_SECOND = 20;
    /** The poller's buckets ({@code EventPoller.BUCKETS}): the rows of one idle poll, at most. */
    static final long BUCKETS = 32;

    static IngestApp app;
    static TransactionTemplate tx;
    static long[] pks = new long[STREAMS];

    @BeforeAll
    static void start() {
        app = new IngestApp(
                "sharedpoll",
                Map.of(
                        "settle.limits.rate",
                        "0",
                        "settle.events.max-per-tenant",
                        "2000",
                        "settle.events.max-per-instance",
                        "2000",
                        StatementCounter.PROPERTY,
                        StatementCounter.class.getName()));
        tx = new TransactionTemplate(app.context.getBean(PlatformTransactionManager.class));
        List<Object[]> rows = new ArrayList<>();
        for (int i = 0; i < STREAMS; i++) {
            rows.add(new Object[] {"idle-" + i});
        }
        app.jdbc.batchUpdate(
                "INSERT INTO chat_session (tenant_id, external_id, created_at) VALUES ('default', ?, UTC_TIMESTAMP(6))",
                rows);
        for (int i = 0; i < STREAMS; i++) {
            pks[i] = app.jdbc.queryForObject(
                    "SELECT id FROM chat_session WHERE tenant_id = 'default' AND external_id = ?",
                    Long.class,
                    "idle-" + i);
        }
    }

    @AfterAll
    static void stop() {
        if (app != null) {
            app.close();
        }
    }

    static double open() {
        return app.context
                .getBean(MeterRegistry.class)
                .get("settle.events.open")
                .gauge()
                .value();
    }

    /** Appends one reply.delta to session {@code i} as the agent does (its own transaction); returns its seq. */
    static long append(int i, String text) {
        tx.executeWithoutResult(s -> SessionEvents.append(
                app.jdbc, pks[i], null, SessionEvents.Event.of("reply.delta", null, Map.of("text", text))));
        return app.jdbc.queryForObject("SELECT event_seq FROM chat_session WHERE id = ?", Long.class, pks[i]);
    }

    /**
     * CPU time of this JVM (the app, its clients, the embedded broker), of the MariaDB server and of the app's event
     * poller thread (none before there was one), in ns.
     */
    static long[] cpu() {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        long poller = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals("settle-event-poller"))
                .mapToLong(t -> threads.getThreadCpuTime(t.threadId()))
                .sum();
        long jvm = ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
        long db = ProcessHandle.current()
                .descendants()
                .filter(p -> p.info().command().orElse("").contains("mariadbd")
                        || p.info().command().orElse("").contains("mysqld"))
                .mapToLong(
                        p -> p.info().totalCpuDuration().orElse(Duration.ZERO).toNanos())
                .sum();
        return new long[] {jvm, db, poller};
    }

    /** CPU time of every live platform thread (carriers run the virtual ones), by name and id. */
    static Map<String, Long> threadCpu() {
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        Map<String, Long> out = new java.util.HashMap<>();
        for (long id : threads.getAllThreadIds()) {
            java.lang.management.ThreadInfo info = threads.getThreadInfo(id);
            long cpu = threads.getThreadCpuTime(id);
            if (info != null && cpu >= 0) {
                out.put(info.getThreadName() + "#" + id, cpu);
            }
        }
        return out;
    }

    /** The 8 threads that used the most CPU between two {@link #threadCpu} snapshots, in ms. */
    static List<String> busiest(Map<String, Long> before, Map<String, Long> after) {
        return after.entrySet().stream()
                .map(e -> Map.entry(e.getKey(), e.getValue() - before.getOrDefault(e.getKey(), 0L)))
                .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                .limit(8)
                .map(e -> e.getKey() + "=" + e.getValue() / 1_000_000)
                .toList();
    }

    record Window(
            Map<String, Long> statements, Map<String, Long> rows, double jvmCores, double dbCores, double pollerCores) {
        long total() {
            return StatementCounter.total(statements);
        }

        double perSecond() {
            return total() * 1000.0 / WINDOW.toMillis();
        }
    }

    /** Statements and CPU during {@link #WINDOW}, waited out by Awaitility. */
    static Window measure() {
        Map<String, Long> before = StatementCounter.snapshot();
        Map<String, Long> rowsBefore = StatementCounter.rowsSnapshot();
        long[] cpuBefore = cpu();
        long start = System.nanoTime();
        await().pollDelay(WINDOW).atMost(WINDOW.plusSeconds(5)).until(() -> true);
        long[] cpuAfter = cpu();
        long took = System.nanoTime() - start;
        Map<String, Long> after = StatementCounter.snapshot();
        return new Window(
                StatementCounter.delta(before, after),
                StatementCounter.delta(rowsBefore, StatementCounter.rowsSnapshot()),
                (cpuAfter[0] - cpuBefore[0]) / (double) took,
                (cpuAfter[1] - cpuBefore[1]) / (double) took,
                (cpuAfter[2] - cpuBefore[2]) / (double) took);
    }

    /** The statements (or rows) of the poller's reads of sessions' seqs, after a bucket had news. */
    static long sessionReads(Map<String, Long> counts) {
        return StatementCounter.total(counts, "SELECT id, event_seq FROM chat_session WHERE id IN");
    }

    @Test
    void idle_streams_share_one_poll_and_a_delta_reaches_only_its_stream_exactly_once() throws Exception {
        Window none = measure();
        System.out.printf(
                "no streams: %d statements in %s %s, CPU %.3f cores (JVM) %.3f (MariaDB)%n",
                none.total(), WINDOW, none.statements(), none.jvmCores(), none.dbCores());

        long t0 = System.nanoTime();
        HttpClient shared = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10))
                .build();
        List<SseClient> streams = new ArrayList<>();
        // 64 connecting at a time: a thousand at once overflow the server's accept backlog (100)
        Semaphore connecting = new Semaphore(64);
        try (ExecutorService opener = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<SseClient>> opening = new ArrayList<>();
            for (int i = 0; i < STREAMS; i++) {
                String session = "idle-" + i;
                opening.add(opener.submit(() -> {
                    connecting.acquire();
                    try {
                        return SseClient.open(shared, app, IngestApp.KEY, session, null);
                    } finally {
                        connecting.release();
                    }
                }));
            }
            for (Future<SseClient> f : opening) {
                streams.add(f.get());
            }
        }
        try {
            for (SseClient s : streams) {
                assertEquals(200, s.status);
            }
            await().atMost(WITHIN).until(() -> open() == STREAMS);
            System.out.printf("%d streams opened in %d ms%n", STREAMS, (System.nanoTime() - t0) / 1_000_000);

            Window warmUp = measure(); // after a thousand openings: compilation and collection settle
            System.out.printf(
                    "%d idle streams, first window: %d statements, CPU %.3f cores (JVM)%n",
                    STREAMS, warmUp.total(), warmUp.jvmCores());
            Map<String, Long> threadsBefore = threadCpu();
            Window idle = measure();
            Map<String, Long> threadsAfter = threadCpu();
            System.out.printf(
                    "%d idle streams: %d statements in %s = %.1f/s %s, rows read %s, CPU %.3f cores (JVM) %.3f"
                            + " (MariaDB) %.4f (poller thread)%n",
                    STREAMS,
                    idle.total(),
                    WINDOW,
                    idle.perSecond(),
                    idle.statements(),
                    idle.rows(),
                    idle.jvmCores(),
                    idle.dbCores(),
                    idle.pollerCores());
            System.out.println("busiest threads in that window (ms of CPU): " + busiest(threadsBefore, threadsAfter));
            for (SseClient s : streams) {
                assertEquals(0, s.pending());
            }

            // a delta of one session reaches its stream alone, once, in order, promptly
            Map<String, Long> detailBefore = StatementCounter.snapshot();
            Map<String, Long> detailRowsBefore = StatementCounter.rowsSnapshot();
            long[] latencies = new long[DELTAS];
            long[] lastSeq = new long[STREAMS];
            for (int d = 0; d < DELTAS; d++) {
                int i = (d * 37) % STREAMS;
                // commits come at any moment of the poll interval, not just after the previous delta was received
                // (that would lock their phase to the poll's)
                await().pollDelay(Duration.ofMillis(ThreadLocalRandom.current().nextInt(60)))
                        .atMost(WITHIN)
                        .until(() -> true);
                long seq = append(i, "delta " + d);
                long committed = System.nanoTime();
                List<SseClient.Event> got = streams.get(i).take(1, WITHIN);
                assertEquals(1, got.size(), "delta " + d + " reached stream " + i);
                assertEquals(Long.toString(seq), got.getFirst().id());
                assertEquals("reply.delta", got.getFirst().type());
                assertEquals("{\"text\":\"delta " + d + "\"}", got.getFirst().data());
                assertEquals(lastSeq[i] + 1, seq, "seqs of session " + i + " in order");
                lastSeq[i] = seq;
                latencies[d] = Math.max(0, got.getFirst().receivedNanos() - committed);
            }
            // each delta (one at a time) has its session's bucket read, 1/32 of the sessions, not all of them
            long details = sessionReads(StatementCounter.delta(detailBefore, StatementCounter.snapshot()));
            long detailRows = sessionReads(StatementCounter.delta(detailRowsBefore, StatementCounter.rowsSnapshot()));
            System.out.printf("%d deltas: %d reads of sessions' seqs, %d rows%n", DELTAS, details, detailRows);
            assertTrue(details >= DELTAS && details <= 2L * DELTAS, details + " reads of sessions' seqs");
            assertTrue(
                    detailRows <= details * Math.ceilDiv(STREAMS, BUCKETS),
                    detailRows + " rows in " + details + " reads of sessions' seqs, at most one bucket each");
            Arrays.sort(latencies);
            System.out.printf(
                    "delta commit -> client, %d deltas over %d open streams: p50 %.1f ms, p99 %.1f ms, max %.1f ms%n",
                    DELTAS,
                    STREAMS,
                    latencies[DELTAS / 2] / 1e6,
                    latencies[(int) Math.ceil(DELTAS * 0.99) - 1] / 1e6,
                    latencies[DELTAS - 1] / 1e6);

            // a reconnect with Last-Event-ID gets exactly the events after it
            int r = 37;
            streams.get(r).close();
            long[] missed = {append(r, "away 1"), append(r, "away 2"), append(r, "away 3")};
            SseClient resumed = SseClient.open(shared, app, IngestApp.KEY, "idle-" + r, Long.toString(lastSeq[r]));
            streams.set(r, resumed);
            List<SseClient.Event> replay = resumed.take(3, WITHIN);
            assertEquals(
                    List.of(missed[0] + " away 1", missed[1] + " away 2", missed[2] + " away 3"),
                    replay.stream()
                            .map(e -> e.id() + " " + e.data().replaceAll(".*\"text\":\"([^\"]*)\".*", "$1"))
                            .toList());
            assertEquals(lastSeq[r] + 1, missed[0]);
            long next = append(r, "back");
            List<SseClient.Event> after = resumed.take(1, WITHIN);
            assertEquals(1, after.size());
            assertEquals(Long.toString(next), after.getFirst().id());

            // a second stream of a watched session (one the poller already saw) starts from its Last-Event-ID, and
            // the next delta reaches both streams once
            SseClient second = SseClient.open(shared, app, IngestApp.KEY, "idle-" + r, Long.toString(missed[0]));
            List<SseClient.Event> caughtUp = second.take(3, WITHIN);
            assertEquals(
                    List.of(Long.toString(missed[1]), Long.toString(missed[2]), Long.toString(next)),
                    caughtUp.stream().map(SseClient.Event::id).toList());
            long both = append(r, "both");
            for (SseClient s : List.of(resumed, second)) {
                List<SseClient.Event> got = s.take(1, WITHIN);
                assertEquals(1, got.size());
                assertEquals(Long.toString(both), got.getFirst().id());
            }
            streams.add(second);

            // nothing reached any other stream, nor twice: every event taken above was the only one
            for (int i = 0; i < streams.size(); i++) {
                assertEquals(0, streams.get(i).pending(), "stream " + i + " got more");
            }

            // asserted last, so that the figures above are printed either way
            long allowed = POLLS_PER_SECOND * WINDOW.toSeconds() + 1 + none.total();
            assertTrue(
                    idle.total() <= allowed,
                    idle.total() + " statements in " + WINDOW + " for idle streams, at most " + allowed + ": "
                            + idle.statements());
            assertEquals(
                    0,
                    idle.statements().entrySet().stream()
                            .filter(e -> e.getKey().contains("FROM session_event"))
                            .mapToLong(Map.Entry::getValue)
                            .sum(),
                    "idle streams read no events: " + idle.statements());
            long polls = idle.statements().entrySet().stream()
                    .filter(e -> e.getKey().contains("FROM chat_session WHERE id IN"))
                    .mapToLong(Map.Entry::getValue)
                    .sum();
            long pollRows = idle.rows().entrySet().stream()
                    .filter(e -> e.getKey().contains("FROM chat_session WHERE id IN"))
                    .mapToLong(Map.Entry::getValue)
                    .sum();
            assertTrue(polls > 0, "the poll ran: " + idle.statements());
            // a statement is counted when sent and its rows when they come back: a poll in flight as the window
            // opened brings its rows into the window without its statement
            assertTrue(
                    pollRows <= BUCKETS * (polls + 1),
                    pollRows + " rows read by " + polls + " idle polls (+1 in flight), at most " + BUCKETS + " each: "
                            + idle.rows());
            assertEquals(
                    0, sessionReads(idle.statements()), "an idle poll reads no session's row: " + idle.statements());
        } finally {
            for (SseClient s : streams) {
                s.close();
            }
            shared.shutdownNow();
        }
        // that no stream costs no statement: EventStreamBeforeSessionTest, whose clients are noticed gone sooner
    }
}
