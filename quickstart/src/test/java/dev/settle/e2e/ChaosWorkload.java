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
 */
final class ChaosWorkload {
    /** One accepted message. */
    record Accepted(String sessionId, long version, String messageId, String text) {}

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

    private final AtomicInteger amounts = new AtomicInteger(1000);
    private final SettleSystem settle;
    private final Duration window;

    ChaosWorkload(SettleSystem settle, Duration window) {
        this.settle = settle;
        this.window = window;
    }

    List<String> run(int sessions, int burstsPerSession, long seed) throws Exception {
        List<String> ids = new ArrayList<>();
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
            if (r.body().contains("last turn failed") && settle.postPath("/v1/sessions/" + s + "/retry") == 202) {
                failedTurnRetries.incrementAndGet();
            }
            sleep(2000);
            r = timedPost(s, text, idempotencyKey);
        }
        if (r.status() != 202) {
            throw new AssertionError("POST " + s + " answered " + r.status() + ": " + r.body() + "\n" + state(s));
        }
        Accepted a = new Accepted(
                s, r.json().get("version").asLong(), r.json().get("messageId").asString(), text);
        accepted.putIfAbsent(a.messageId(), a);
    }

    /** The session as the agents see it (its row, its timer, its last turns): stuck or slow, for a failure message. */
    private String state(String s) {
        StringBuilder sb = new StringBuilder("session ").append(s).append(" at ");
        try {
            sb.append(settle.jdbc.queryForObject("SELECT UTC_TIMESTAMP(6)", String.class));
            settle.jdbc
                    .queryForList("""
                    SELECT id, version, replied_version, failed_version, oldest_unanswered_at, last_message_at,
                           lease_token, lease_epoch, lease_expires_at
                      FROM chat_session WHERE external_id = ?""", s)
                    .forEach(row -> sb.append("\n  session ").append(row));
            settle.jdbc
                    .queryForList("""
                    SELECT d.* FROM debounce_timer d JOIN chat_session s ON s.id = d.session_id
                     WHERE s.external_id = ?""", s)
                    .forEach(row -> sb.append("\n  timer ").append(row));
            settle.jdbc
                    .queryForList("""
                    SELECT b.* FROM session_burst b JOIN chat_session s ON s.id = b.session_id
                     WHERE s.external_id = ?""", s)
                    .forEach(row -> sb.append("\n  burst ").append(row));
            settle.jdbc
                    .queryForList("""
                    SELECT t.id, t.state, t.from_version, t.to_version, t.lease_epoch, t.reason, t.started_at, t.ended_at
                      FROM chat_turn t JOIN chat_session s ON s.id = t.session_id
                     WHERE s.external_id = ? ORDER BY t.id DESC LIMIT 8""", s)
                    .forEach(row -> sb.append("\n  turn ").append(row));
        } catch (RuntimeException e) {
            sb.append("\n  (state unreadable: ").append(e).append(')');
        }
        return sb.toString();
    }

    private ApiResult timedPost(String s, String text, String idempotencyKey) {
        long started = System.nanoTime();
        int status = -1;
        try {
            ApiResult r = settle.postWithKey(s, text, idempotencyKey);
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
