package dev.settle.ingest;

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
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * An open event stream read on a thread of its own: events are queued as they arrive, keep-alive comments counted,
 * so a test takes exactly the events it expects within a timeout and never blocks on a read.
 */
final class SseClient implements AutoCloseable {
    /** @param receivedNanos {@link System#nanoTime()} when the event's last line was read */
    record Event(String id, String type, String data, long receivedNanos) {}

    final int status;
    final String contentType;
    private final HttpClient client;
    private final InputStream body;
    private final BlockingQueue<Event> events = new LinkedBlockingQueue<>();
    private final AtomicInteger keepAlives = new AtomicInteger();
    private final boolean ownClient;
    private final Thread reader;

    private SseClient(HttpClient client, boolean ownClient, HttpResponse<InputStream> response) {
        this.client = client;
        this.ownClient = ownClient;
        this.status = response.statusCode();
        this.contentType = response.headers().firstValue("Content-Type").orElse("");
        this.body = response.body();
        this.reader = Thread.ofVirtual().start(this::read);
    }

    /** Opens {@code GET /v1/sessions/{sessionId}/events} with the key and, unless null, a Last-Event-ID. */
    static SseClient open(IngestApp app, String key, String sessionId, String lastEventId) throws Exception {
        return open(HttpClient.newHttpClient(), true, app, key, sessionId, lastEventId);
    }

    /**
     * The same on a client shared by many streams (HTTP/1.1: one connection each), which {@link #close} leaves
     * open.
     */
    static SseClient open(HttpClient shared, IngestApp app, String key, String sessionId, String lastEventId)
            throws Exception {
        return open(shared, false, app, key, sessionId, lastEventId);
    }

    private static SseClient open(
            HttpClient client, boolean ownClient, IngestApp app, String key, String sessionId, String lastEventId)
            throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(
                        URI.create(app.base + "/v1/sessions/" + sessionId + "/events"))
                .header("Authorization", "Bearer " + key)
                .header("Accept", "text/event-stream")
                .GET();
        if (lastEventId != null) {
            request.header("Last-Event-ID", lastEventId);
        }
        return new SseClient(
                client, ownClient, client.send(request.build(), HttpResponse.BodyHandlers.ofInputStream()));
    }

    private void read() {
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(body, StandardCharsets.UTF_8))) {
            String id = null;
            String type = null;
            String data = null;
            for (String line; (line = lines.readLine()) != null; ) {
                if (line.isEmpty()) {
                    if (id != null) {
                        events.add(new Event(id, type, data, System.nanoTime()));
                    }
                    id = type = data = null;
                } else if (line.startsWith(": keep-alive")) {
                    keepAlives.incrementAndGet();
                } else if (line.startsWith("id: ")) {
                    id = line.substring(4);
                } else if (line.startsWith("event: ")) {
                    type = line.substring(7);
                } else if (line.startsWith("data: ")) {
                    data = line.substring(6);
                }
            }
        } catch (IOException closed) {
            // the test hung up
        }
    }

    /** The next {@code n} events, waiting at most {@code within} for all of them (fewer if they do not come). */
    List<Event> take(int n, Duration within) throws InterruptedException {
        long deadline = System.nanoTime() + within.toNanos();
        List<Event> taken = new ArrayList<>();
        while (taken.size() < n) {
            Event e = events.poll(Math.max(0, deadline - System.nanoTime()), TimeUnit.NANOSECONDS);
            if (e == null) {
                break;
            }
            taken.add(e);
        }
        return taken;
    }

    int keepAlives() {
        return keepAlives.get();
    }

    /** Events received and not taken yet. */
    int pending() {
        return events.size();
    }

    @Override
    public void close() throws Exception {
        body.close();
        if (ownClient) {
            client.shutdownNow();
        }
        reader.join(5_000);
    }
}
