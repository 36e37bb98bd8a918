package dev.settle.e2e;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * Generated traffic: many sessions, each a sequence of bursts of 1–6 messages with gaps around the
 * debounce window; double-clicks (one Idempotency-Key posted twice at once), multi-device bursts (two posts
 * at once), messages while a reply is generating, bookings that run a side-effecting tool, and fast
 * typists who type past max-wait. Every 202 is recorded: the history the checker judges.
 *
 * <p>It runs in a JVM of its own ({@link ChaosClients}), as users' clients do: the POST latencies the checker judges
 * are then the service's, not those of 200 clients waiting for the same two carriers as the service's own threads.
 */
final class ChaosWorkload {
    /** What the workload sends through: ingest-api's HTTP API. */
    interface Api {
        /** POSTs a message with an optional Idempotency-Key; never throws on a non-202. */
        ApiResult post(String sessionId, String text, String idempotencyKey);

        /** POSTs an empty body to {@code path}; returns the status. */
        int postPath(String path);
    }

    /** One accepted message. */
    record Accepted(String sessionId, long version, String messageId, String text) {}

    /**
     * What a run leaves for the checker, as it crosses from the clients' JVM: the sessions, every accepted message,
     * the bookings per session, the counters by name, every POST attempt, and the first POST that failed (null: none)
     * with its session.
     */
    record Results(
            List<String> ids,
            List<Accepted> accepted,
            Map<String, Integer> bookingsPerSession,
            Map<String, Integer> counts,
            List<Post> posts,
            String failure,
            String failedSession) {}

    /** Every accepted message by messageId (a replayed Idempotency-Key answers the same id). */
    final Map<String, Accepted> accepted = new ConcurrentHashMap<>();

    final Map<String, Integer> bookingsPerSession = new ConcurrentHashMap<>();
    final AtomicInteger bursts = new AtomicInteger();
    final AtomicInteger doubleClicks = new AtomicInteger();
    final AtomicInteger multiDevice = new AtomicInteger();
    final AtomicInteger fastTypists = new AtomicInteger();
    /** 503 answers (database unavailable) that the client retried. */
    final AtomicInteger serverRetries = new AtomicInteger();
    /** 429 answers (100 unanswered messages in the session) that the client waited out and retried. */
    final AtomicInteger unansweredRefusals = new AtomicInteger();
    /**
     * Failed turns the client had answered again ({@code POST /retry} answered 202) while its messages were refused:
     * a session whose last turn failed waits for a new message or a retry, and a refused message is not new.
     */
    final AtomicInteger failedTurnRetries = new AtomicInteger();
    /** One POST attempt: its session, its answer's status, when it started (System.nanoTime) and how long it took. */
    record Post(String sessionId, int status, long startNanos, long nanos) {
        long millis() {
            return nanos / 1_000_000;
        }
    }

    /** Every POST attempt, retries included. */
    final List<Post> postTimes = java.util.Collections.synchronizedList(new ArrayList<>());

    /** The sessions of the run. */
    final List<String> ids = new ArrayList<>();

    private final AtomicInteger amounts = new AtomicInteger(1000);
    private final Api api;
    private final Duration window;

    ChaosWorkload(Api api, Duration window) {
        this.api = api;
        this.window = window;
    }

    /** The run's results ({@link #results}) back in a workload, for the checker and the report. */
    static ChaosWorkload of(Results r) {
        ChaosWorkload w = new ChaosWorkload(null, Duration.ZERO);
        w.ids.addAll(r.ids());
        r.accepted().forEach(a -> w.accepted.put(a.messageId(), a));
        w.bookingsPerSession.putAll(r.bookingsPerSession());
        w.postTimes.addAll(r.posts());
        w.counters().forEach((name, counter) -> counter.set(r.counts().getOrDefault(name, 0)));
        return w;
    }

    /** A POST the client could not get accepted, with its session. */
    static final class Refused extends AssertionError {
        final String sessionId;

        Refused(String sessionId, String message) {
            super(message);
            this.sessionId = sessionId;
        }
    }

    /** What the run left; {@code failure}: the error that ended it (null: none), {@code failedSession} its session. */
    Results results(String failure, String failedSession) {
        Map<String, Integer> counts = new java.util.TreeMap<>();
        counters().forEach((name, counter) -> counts.put(name, counter.get()));
        synchronized (postTimes) {
            return new Results(
                    List.copyOf(ids),
                    List.copyOf(accepted.values()),
                    Map.copyOf(bookingsPerSession),
                    counts,
                    List.copyOf(postTimes),
                    failure,
                    failedSession);
        }
    }

    private Map<String, AtomicInteger> counters() {
        return Map.of(
                "bursts", bursts,
                "doubleClicks", doubleClicks,
                "multiDevice", multiDevice,
                "fastTypists", fastTypists,
                "serverRetries", serverRetries,
                "unansweredRefusals", unansweredRefusals,
                "failedTurnRetries", failedTurnRetries);
    }

    List<String> run(int sessions, int burstsPerSession, long seed) throws Exception {
        for (int i = 0; i < sessions; i++) {
            ids.add("chaos-" + i + "-" + UUID.randomUUID().toString().substring(0, 8));
        }
        try (ExecutorService users = Executors.newVirtualThreadPerTaskExecutor()) {
            List<Future<?>> all = new ArrayList<>();
            for (int i = 0; i < sessions; i++) {
                String s = ids.get(i);
                Random random = new Random(seed + i);
                all.add(users.submit(() -> {
                    for (int b = 0; b < burstsPerSession; b++) {
                        burst(s, random);
                        sleep(random.nextInt(4) == 0 ? 100 : 300 + random.nextInt(3000));
                    }
                    return null;
                }));
            }
            for (Future<?> f : all) {
                f.get();
            }
        }
        return ids;
    }

    private void burst(String s, Random random) throws Exception {
        bursts.incrementAndGet();
        boolean fastTypist = random.nextInt(12) == 0;
        int size = fastTypist ? 18 : 1 + random.nextInt(6);
        if (fastTypist) {
            fastTypists.incrementAndGet();
        }
        for (int m = 0; m < size; m++) {
            int kind = random.nextInt(10);
            if (kind == 0) {
                doubleClick(s);
            } else if (kind == 1) {
                twoDevices(s, random);
            } else if (kind <= 3) {
                int amount = amounts.incrementAndGet();
                bookingsPerSession.merge(s, 1, Integer::sum);
                post(s, "book " + amount + " please", null);
            } else {
                post(s, "msg " + m + " of " + s, null);
            }
            // gaps around the window: mostly inside it, sometimes just past it
            long gap =
                    fastTypist ? window.toMillis() / 2 : (long) (window.toMillis() * (0.2 + random.nextDouble() * 1.1));
            sleep(gap);
        }
    }

    private void doubleClick(String s) throws Exception {
        doubleClicks.incrementAndGet();
        String key = UUID.randomUUID().toString();
        String text = "double click " + key.substring(0, 6);
        together(() -> post(s, text, key), () -> post(s, text, key));
    }

    private void twoDevices(String s, Random random) throws Exception {
        multiDevice.incrementAndGet();
        together(
                () -> post(s, "phone says " + random.nextInt(1000), null),
                () -> post(s, "laptop says " + random.nextInt(1000), null));
    }

    private void together(Runnable a, Runnable b) throws Exception {
        CyclicBarrier barrier = new CyclicBarrier(2);
        try (ExecutorService two = Executors.newVirtualThreadPerTaskExecutor()) {
            Future<?> fa = two.submit(() -> {
                barrier.await();
                a.run();
                return null;
            });
            Future<?> fb = two.submit(() -> {
                barrier.await();
                b.run();
                return null;
            });
            fa.get();
            fb.get();
        }
    }

    private void post(String s, String text, String idempotencyKey) {
        ApiResult r = timedPost(s, text, idempotencyKey);
        for (int retry = 0; r.status() == 503 && retry < 10; retry++) { // as a client should: back off, retry
            serverRetries.incrementAndGet();
            sleep(300);
            r = timedPost(s, text, idempotencyKey);
        }
        // 100 messages unanswered (the long run's overloaded machine lags that far behind a fast typist):
        // nothing was stored; a client waits for the answers and sends again. When the refusal says the last turn
        // failed (the model was down), nothing answers the session until a retry: the client asks for one, as the
        // quiesce step does
        for (int retry = 0; r.status() == 429 && r.body().contains("too-many-unanswered") && retry < 150; retry++) {
            unansweredRefusals.incrementAndGet();
            if (r.body().contains("last turn failed") && api.postPath("/v1/sessions/" + s + "/retry") == 202) {
                failedTurnRetries.incrementAndGet();
            }
            sleep(2000);
            r = timedPost(s, text, idempotencyKey);
        }
        if (r.status() != 202) {
            throw new Refused(s, "POST " + s + " answered " + r.status() + ": " + r.body());
        }
        Accepted a = new Accepted(
                s, r.json().get("version").asLong(), r.json().get("messageId").asString(), text);
        accepted.putIfAbsent(a.messageId(), a);
    }

    private ApiResult timedPost(String s, String text, String idempotencyKey) {
        long started = System.nanoTime();
        int status = -1;
        try {
            ApiResult r = api.post(s, text, idempotencyKey);
            status = r.status();
            return r;
        } finally {
            postTimes.add(new Post(s, status, started, System.nanoTime() - started));
        }
    }

    private static void sleep(long ms) {
        SettleSystem.sleep(Duration.ofMillis(ms));
    }

    record ApiResult(int status, String body, tools.jackson.databind.JsonNode json) {}
}
