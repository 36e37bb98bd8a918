package dev.settle.bench;

import org.HdrHistogram.Histogram;
import org.HdrHistogram.Recorder;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

/** The client side of the bench: HTTP posts to ingest-api, closed- and open-loop drivers, histograms. */
final class Load {
    private static final HttpClient HTTP = HttpClient.newBuilder()
            .version(HttpClient.Version.HTTP_1_1)
            .connectTimeout(Duration.ofSeconds(5))
            .build();

    private Load() {}

    /** A histogram of microseconds from 1 µs to 10 min, 3 significant digits. */
    static Histogram micros() {
        return new Histogram(1, TimeUnit.MINUTES.toMicros(10), 3);
    }

    static Recorder recorder() {
        return new Recorder(1, TimeUnit.MINUTES.toMicros(10), 3);
    }

    static void record(Histogram h, long micros) {
        h.recordValue(Math.max(1, Math.min(micros, h.getHighestTrackableValue())));
    }

    static void record(Recorder r, long micros) {
        r.recordValue(Math.max(1, Math.min(micros, TimeUnit.MINUTES.toMicros(10))));
    }

    static double ms(Histogram h, double percentile) {
        return h.getTotalCount() == 0 ? Double.NaN : h.getValueAtPercentile(percentile) / 1000.0;
    }

    /** POSTs a message with the bench's key; returns the HTTP status (0 when the request failed outright). */
    static int post(String base, String sessionId, String text) {
        return post(base, Infra.API_KEY, sessionId, text);
    }

    /** POSTs a message with a tenant's key; returns the HTTP status (0 when the request failed outright). */
    static int post(String base, String key, String sessionId, String text) {
        return send(base + "/v1/sessions/" + sessionId + "/messages", key, "{\"text\":\"" + text + "\"}");
    }

    /** Signals that the user of a session is typing; returns the HTTP status (0 when it failed outright). */
    static int typing(String base, String key, String sessionId) {
        return send(base + "/v1/sessions/" + sessionId + "/typing", key, "{}");
    }

    private static int send(String url, String key, String json) {
        HttpRequest request = HttpRequest.newBuilder(URI.create(url))
                .header("Authorization", "Bearer " + key)
                .header("Content-Type", "application/json")
                .timeout(Duration.ofSeconds(30))
                .POST(HttpRequest.BodyPublishers.ofString(json))
                .build();
        try {
            return HTTP.send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (java.io.IOException e) {
            return 0;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return 0;
        }
    }

    /** Creates a tenant through the admin API and returns its API key. */
    static String tenant(String base, String id) {
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + "/v1/admin/tenants"))
                .header("Authorization", "Bearer " + Infra.ADMIN_KEY)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString("{\"id\":\"" + id + "\"}"))
                .build();
        try {
            HttpResponse<String> created = HTTP.send(request, HttpResponse.BodyHandlers.ofString());
            if (created.statusCode() != 201) {
                throw new IllegalStateException(
                        "creating tenant " + id + ": HTTP " + created.statusCode() + " " + created.body());
            }
            return tools.jackson.databind.json.JsonMapper.builder()
                    .build()
                    .readTree(created.body())
                    .path("apiKey")
                    .path("key")
                    .asString();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    static int put(String base, String path, String json) {
        HttpRequest request = HttpRequest.newBuilder(URI.create(base + path))
                .header("Authorization", "Bearer " + Infra.API_KEY)
                .header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofString(json))
                .build();
        try {
            return HTTP.send(request, HttpResponse.BodyHandlers.discarding()).statusCode();
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** What a driver measured: completed operations, failed ones, seconds, latencies (µs). */
    record Result(long ok, long failed, double seconds, Histogram latency, long total) {
        double rate() {
            return ok / seconds;
        }
    }

    /**
     * Closed loop: {@code clients} virtual threads each run {@code op} back to back for {@code duration} (after a
     * {@code warmup} that is not counted). {@code op} returns true on success.
     */
    static Result closedLoop(int clients, Duration warmup, Duration duration, Op op) throws InterruptedException {
        Recorder recorder = recorder();
        AtomicLong ok = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        AtomicLong total = new AtomicLong();
        long start = System.nanoTime();
        long measureFrom = start + warmup.toNanos();
        long end = measureFrom + duration.toNanos();
        try (ExecutorService ex = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int c = 0; c < clients; c++) {
                int client = c;
                ex.execute(() -> {
                    long i = 0;
                    while (true) {
                        long t0 = System.nanoTime();
                        if (t0 >= end) {
                            return;
                        }
                        boolean success = op.run(client, i++);
                        long t1 = System.nanoTime();
                        total.incrementAndGet();
                        if (t0 >= measureFrom && t1 <= end) {
                            if (success) {
                                ok.incrementAndGet();
                                record(recorder, (t1 - t0) / 1000);
                            } else {
                                failed.incrementAndGet();
                            }
                        }
                    }
                });
            }
        }
        return new Result(
                ok.get(), failed.get(), duration.toNanos() / 1e9, recorder.getIntervalHistogram(), total.get());
    }

    /**
     * Open loop: starts {@code op} at a constant {@code ratePerSecond} for {@code duration}, each on its own virtual
     * thread, whatever the previous ones are doing. Latency counts from the intended start (no coordinated
     * omission). At most {@code maxOutstanding} operations run at once; a start that finds none free waits, and its
     * wait counts in its latency.
     */
    static Result openLoop(double ratePerSecond, Duration duration, int maxOutstanding, Op op)
            throws InterruptedException {
        Recorder recorder = recorder();
        AtomicLong ok = new AtomicLong();
        AtomicLong failed = new AtomicLong();
        Semaphore outstanding = new Semaphore(maxOutstanding);
        long start = System.nanoTime();
        long n = (long) (ratePerSecond * duration.toNanos() / 1e9);
        double intervalNanos = 1e9 / ratePerSecond;
        try (ExecutorService ex = Executors.newVirtualThreadPerTaskExecutor()) {
            for (long i = 0; i < n; i++) {
                long intended = start + (long) (i * intervalNanos);
                sleepUntil(intended);
                outstanding.acquire();
                long index = i;
                ex.execute(() -> {
                    try {
                        boolean success = op.run(0, index);
                        if (success) {
                            ok.incrementAndGet();
                            record(recorder, (System.nanoTime() - intended) / 1000);
                        } else {
                            failed.incrementAndGet();
                        }
                    } finally {
                        outstanding.release();
                    }
                });
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        return new Result(ok.get(), failed.get(), seconds, recorder.getIntervalHistogram(), ok.get() + failed.get());
    }

    /** Runs {@code action(i)} at a constant rate, each on a virtual thread; returns when all have finished. */
    static void paced(double ratePerSecond, long count, LongConsumer action) throws InterruptedException {
        long start = System.nanoTime();
        double intervalNanos = 1e9 / ratePerSecond;
        try (ExecutorService ex = Executors.newVirtualThreadPerTaskExecutor()) {
            for (long i = 0; i < count; i++) {
                sleepUntil(start + (long) (i * intervalNanos));
                long index = i;
                ex.execute(() -> action.accept(index));
            }
        }
    }

    static void sleepUntil(long nanoTime) throws InterruptedException {
        long wait = nanoTime - System.nanoTime();
        if (wait > 0) {
            TimeUnit.NANOSECONDS.sleep(wait);
        }
    }

    static void sleep(Duration d) {
        try {
            Thread.sleep(d);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @FunctionalInterface
    interface Op {
        boolean run(int client, long index);
    }
}
