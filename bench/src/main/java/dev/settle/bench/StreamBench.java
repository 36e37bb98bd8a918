package dev.settle.bench;

import com.zaxxer.hikari.HikariDataSource;
import dev.settle.schema.DbTime;
import dev.settle.schema.SessionEvents;
import org.HdrHistogram.Histogram;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Goal 6: {@value #STREAMS} idle event streams on one ingest-api in a JVM of its own ({@link Child}), read by SSE
 * clients in this JVM.
 *
 * <ol>
 *   <li>At rest without any stream, then with the streams open and idle (after a settling time), over a window at
 *       least as long as the keep-alive interval: SQL statements/s (the server's {@code Questions} counter; only the
 *       bench uses this server), cores of the ingest JVM and of MariaDB.</li>
 *   <li>Deltas: {@code reply.delta} events appended the way the agent appends them (one transaction each, from this
 *       JVM), to streams picked at random, at random moments (exponential gaps), one after another. Latency: the
 *       client's reading of the event (wall clock) − the event row's {@code created_at} (the database clock,
 *       written inside the committing transaction, so the commit itself is counted). Both clocks are this machine's.
 *       </li>
 * </ol>
 *
 * <p>With profiling on, a JFR recording of the ingest JVM over one more idle window, after the measured one, names
 * where the idle streams' CPU goes.
 */
final class StreamBench {
    static final int STREAMS = 1000;

    /** The default {@code settle.events.keep-alive}: the idle window spans at least one keep-alive of each stream. */
    static final Duration KEEP_ALIVE = Duration.ofSeconds(15);

    /** Streams opening at once: a thousand at once overflow the server's accept backlog (100). */
    static final int OPENING = 64;

    static final Duration WAIT = Duration.ofSeconds(10);

    /** Deltas a second, on average: one stream's share of a reply streamed in 50 ms batches. */
    static final double DELTA_RATE = 20;

    /** Statements/s, cores of the ingest JVM and of MariaDB over a window of {@code seconds}. */
    record Window(double seconds, double statementsPerSecond, double serviceCores, double dbCores) {}

    record Result(
            int streams,
            double openSeconds,
            Window none,
            Window idle,
            long eventsWhileIdle,
            long keepAlives,
            double deltaRate,
            Histogram fromCommit,
            Histogram fromReturn,
            int deltas,
            int lost,
            Profiler.Profile profile) {}

    private StreamBench() {}

    /** The wait before each window: after the start, and after the streams opened (compilation, collection). */
    static Duration settle(Bench.Options o) {
        return Duration.ofSeconds(o.quick() ? 5 : 10);
    }

    static Result run(Infra infra, Bench.Options o) throws Exception {
        Duration settle = settle(o);
        Duration window = o.quick() ? KEEP_ALIVE : KEEP_ALIVE.multipliedBy(2);
        int deltas = o.quick() ? 200 : 1000;
        try (Infra.Scenario s = infra.new Scenario("streams", Map.of())) {
            Map<String, Object> props = new LinkedHashMap<>(s.shared);
            props.put("server.port", "0");
            props.put("management.server.port", "0");
            // one tenant's 1,000 streams: the per-tenant limit (100 by default) is a policy, not a capacity
            props.put("settle.events.max-per-tenant", Integer.toString(STREAMS));
            Bench.log("streams: starting ingest-api in its own JVM");
            try (Child ingest = new Child("ingest", IngestBench.SERVICE_HEAP, props);
                    HikariDataSource pool = IngestBench.samePool(s.jdbcUrl)) {
                JdbcTemplate jdbc = new JdbcTemplate(pool);
                TransactionTemplate tx = new TransactionTemplate(new DataSourceTransactionManager(pool));
                long[] pks = sessions(jdbc);
                Load.sleep(settle);
                Window none = window(infra, ingest, jdbc, window.dividedBy(3));
                log("no stream", none);

                Clients clients = new Clients();
                long t0 = System.nanoTime();
                List<SseStream> streams = clients.openAll(ingest.base(), STREAMS);
                double openSeconds = (System.nanoTime() - t0) / 1e9;
                Bench.log("streams: " + STREAMS + " opened in " + fmt(openSeconds) + " s");
                try {
                    Load.sleep(settle); // after a thousand openings: compilation and collection settle
                    long events0 = clients.events.get();
                    long keepAlives0 = clients.keepAlives.get();
                    Window idle = window(infra, ingest, jdbc, window);
                    long eventsWhileIdle = clients.events.get() - events0;
                    long keepAlives = clients.keepAlives.get() - keepAlives0;
                    log(STREAMS + " idle streams", idle);
                    Bench.log("streams: while idle " + eventsWhileIdle + " events, " + keepAlives + " keep-alives");
                    Profiler.Profile profile = null;
                    if (o.profile()) { // after the measured window: the recording costs CPU of its own
                        ingest.jfrStart();
                        Load.sleep(settle);
                        profile = ingest.jfrStop("streams-idle", o.jfrDir());
                    }

                    Histogram fromCommit = Load.micros();
                    Histogram fromReturn = Load.micros();
                    int lost = deltas(tx, jdbc, pks, clients, deltas, fromCommit, fromReturn);
                    Bench.log("streams: " + deltas + " deltas, " + lost + " lost; commit → client p50 "
                            + fmt(Load.ms(fromCommit, 50)) + " ms, p99 " + fmt(Load.ms(fromCommit, 99))
                            + " ms; load " + Bench.loadAverage());
                    return new Result(
                            STREAMS,
                            openSeconds,
                            none,
                            idle,
                            eventsWhileIdle,
                            keepAlives,
                            DELTA_RATE,
                            fromCommit,
                            fromReturn,
                            deltas,
                            lost,
                            profile);
                } finally {
                    for (SseStream st : streams) {
                        st.close();
                    }
                    clients.http.shutdownNow();
                }
            }
        }
    }

    /** Creates the sessions the streams watch, {@code str-0} … in the default tenant; returns their keys. */
    private static long[] sessions(JdbcTemplate jdbc) {
        Infra.createSessions(jdbc, "str-", STREAMS);
        long[] pks = new long[STREAMS];
        jdbc.query(
                "SELECT id, external_id FROM chat_session WHERE external_id LIKE 'str-%'",
                rs -> {
                    pks[Integer.parseInt(rs.getString("external_id").substring(4))] = rs.getLong("id");
                });
        return pks;
    }

    private static Window window(Infra infra, Child ingest, JdbcTemplate jdbc, Duration length) {
        double[] cpu0 = IngestBench.cpu(infra, ingest);
        long q0 = Infra.questions(jdbc);
        Load.sleep(length);
        long q1 = Infra.questions(jdbc);
        IngestBench.Cpu cpu = IngestBench.cpu(infra, ingest, cpu0);
        double seconds = length.toNanos() / 1e9;
        // the second Questions statement is the bench's own
        return new Window(seconds, (q1 - q0 - 1) / seconds, cpu.serviceCores(), cpu.dbCores());
    }

    private static void log(String what, Window w) {
        Bench.log("streams: " + what + ", " + fmt(w.seconds()) + " s: " + fmt(w.statementsPerSecond())
                + " statements/s, ingest JVM " + fmt(w.serviceCores() * 100) + " % of a core, MariaDB "
                + fmt(w.dbCores() * 100) + " %; load " + Bench.loadAverage());
    }

    /**
     * Appends {@code n} deltas one after another, each to a random stream's session after an exponential gap of mean
     * {@code 1/}{@value #DELTA_RATE} s (so commits fall at any moment of the poll interval), then waits for every client; records
     * commit → client and commit returned → client. Returns the deltas no client read within {@link #WAIT}.
     */
    private static int deltas(
            TransactionTemplate tx,
            JdbcTemplate jdbc,
            long[] pks,
            Clients clients,
            int n,
            Histogram fromCommit,
            Histogram fromReturn)
            throws InterruptedException {
        Map<String, Instant> committed = new LinkedHashMap<>();
        Map<String, Instant> returned = new LinkedHashMap<>();
        ThreadLocalRandom random = ThreadLocalRandom.current();
        for (int d = 0; d < n; d++) {
            Load.sleep(Duration.ofNanos((long) (-Math.log(1 - random.nextDouble()) / DELTA_RATE * 1e9)));
            int i = random.nextInt(pks.length);
            long seq = tx.execute(st -> {
                SessionEvents.append(
                        jdbc, pks[i], null, SessionEvents.Event.of("reply.delta", null, Map.of("text", "delta")));
                // the session row is still locked by this transaction: its event_seq is this delta's
                return jdbc.queryForObject("SELECT event_seq FROM chat_session WHERE id = ?", Long.class, pks[i]);
            });
            Instant back = Instant.now();
            String key = i + ":" + seq;
            returned.put(key, back);
            committed.put(
                    key,
                    jdbc.queryForObject(
                            "SELECT created_at FROM session_event WHERE session_id = ? AND seq = ?",
                            (rs, row) -> DbTime.instant(rs, "created_at"),
                            pks[i],
                            seq));
        }
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!clients.received.keySet().containsAll(committed.keySet()) && System.nanoTime() < deadline) {
            Load.sleep(Duration.ofMillis(50));
        }
        int lost = 0;
        for (var e : committed.entrySet()) {
            Instant got = clients.received.get(e.getKey());
            if (got == null) {
                lost++;
            } else {
                Load.record(
                        fromCommit,
                        Math.max(0, Duration.between(e.getValue(), got).toNanos() / 1000));
                Load.record(
                        fromReturn,
                        Math.max(
                                0,
                                Duration.between(returned.get(e.getKey()), got).toNanos() / 1000));
            }
        }
        return lost;
    }

    /** The SSE clients: one HTTP/1.1 connection each on a shared client, each read on a virtual thread. */
    static final class Clients {
        final HttpClient http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(WAIT)
                .build();
        /** {@code index:id} of every event read → when its last line was read (wall clock). */
        final Map<String, Instant> received = new ConcurrentHashMap<>();

        final AtomicLong events = new AtomicLong();
        final AtomicLong keepAlives = new AtomicLong();

        List<SseStream> openAll(String base, int n) throws Exception {
            Semaphore opening = new Semaphore(OPENING);
            List<SseStream> streams = new ArrayList<>();
            try (ExecutorService ex = Executors.newVirtualThreadPerTaskExecutor()) {
                List<Future<SseStream>> futures = new ArrayList<>();
                for (int i = 0; i < n; i++) {
                    int index = i;
                    futures.add(ex.submit(() -> {
                        opening.acquire();
                        try {
                            return open(base, index);
                        } finally {
                            opening.release();
                        }
                    }));
                }
                for (Future<SseStream> f : futures) {
                    streams.add(f.get());
                }
            }
            return streams;
        }

        private SseStream open(String base, int index) throws Exception {
            HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/v1/sessions/str-" + index + "/events"))
                    .header("Authorization", "Bearer " + Infra.API_KEY)
                    .header("Accept", "text/event-stream")
                    .GET()
                    .build();
            HttpResponse<InputStream> response = http.send(request, HttpResponse.BodyHandlers.ofInputStream());
            if (response.statusCode() != 200) {
                response.body().close();
                throw new IllegalStateException("stream " + index + ": HTTP " + response.statusCode());
            }
            InputStream body = response.body();
            return new SseStream(body, Thread.ofVirtual().start(() -> read(index, body)));
        }

        private void read(int index, InputStream body) {
            try (BufferedReader lines = new BufferedReader(new InputStreamReader(body, StandardCharsets.UTF_8))) {
                String id = null;
                for (String line; (line = lines.readLine()) != null; ) {
                    if (line.isEmpty()) {
                        if (id != null) {
                            received.put(index + ":" + id, Instant.now());
                            events.incrementAndGet();
                        }
                        id = null;
                    } else if (line.startsWith(":")) {
                        keepAlives.incrementAndGet();
                    } else if (line.startsWith("id: ")) {
                        id = line.substring(4);
                    }
                }
            } catch (IOException closed) {
                // the bench hung up
            }
        }
    }

    record SseStream(InputStream body, Thread reader) {
        void close() throws Exception {
            body.close();
            reader.join(5_000);
        }
    }

    private static String fmt(double v) {
        return IngestBench.fmt(v);
    }
}
