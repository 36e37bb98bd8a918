package dev.settle.testsupport;

import com.standardwebhooks.Webhook;
import com.sun.net.httpserver.HttpExchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.OutputStream;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.awaitility.Awaitility.await;

/**
 * A real HTTP endpoint for Standard Webhooks deliveries on 127.0.0.1 and a free port: records every request (any
 * path, any method), answers as scripted (200 by default), and verifies signatures with the standardwebhooks
 * library. Every request runs on its own virtual thread.
 */
public final class WebhookReceiver implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(WebhookReceiver.class);
    private static final Duration POLL = Duration.ofMillis(5);

    /** {@link Delivery#status()} while the answer is not written yet. */
    public static final int PENDING = 0;
    /** {@link Delivery#status()} when writing the answer failed: the sender had gone (best effort detection). */
    public static final int SENDER_GONE = -1;

    /**
     * One received request. {@code status} is what the receiver answered ({@link #PENDING}, {@link #SENDER_GONE});
     * {@code json} is null when the body is not JSON; {@code headers} has lower-case names.
     */
    public record Delivery(
            String path,
            String webhookId,
            String webhookTimestamp,
            String webhookSignature,
            String body,
            JsonNode json,
            Map<String, List<String>> headers,
            int status,
            Instant receivedAt) {
        public boolean acknowledged() {
            return status >= 200 && status < 300;
        }

        Delivery withStatus(int newStatus) {
            return new Delivery(
                    path, webhookId, webhookTimestamp, webhookSignature, body, json, headers, newStatus, receivedAt);
        }
    }

    /** How to answer one delivery: status, extra headers, a delay before answering, and a body. */
    public record Answer(int status, Map<String, String> headers, Duration delay, String body) {
        public static Answer status(int status) {
            return new Answer(status, Map.of(), Duration.ZERO, status < 400 ? "ok" : "error");
        }

        public Answer header(String name, String value) {
            Map<String, String> copy = new HashMap<>(headers);
            copy.put(name, value);
            return new Answer(status, Map.copyOf(copy), delay, body);
        }

        public Answer delay(Duration newDelay) {
            return new Answer(status, headers, newDelay, body);
        }

        public Answer body(String newBody) {
            return new Answer(status, headers, delay, newBody);
        }
    }

    private final List<Delivery> deliveries = new ArrayList<>();
    private final CountDownLatch closed = new CountDownLatch(1);
    private volatile Function<Delivery, Answer> script = d -> Answer.status(200);
    private final LocalHttpServer http;

    private WebhookReceiver() {
        this.http = LocalHttpServer.start(this::answer);
    }

    public static WebhookReceiver start() {
        return new WebhookReceiver();
    }

    /** {@code http://127.0.0.1:PORT/hooks}; any other path on the port is accepted too. */
    public String url() {
        return http.url("/hooks");
    }

    /** Each following request takes the next status; once they are used up, 200. */
    public void answerSequence(int... statuses) {
        Queue<Integer> queue =
                new ConcurrentLinkedQueue<>(Arrays.stream(statuses).boxed().toList());
        answerWith(d -> {
            Integer next = queue.poll();
            return Answer.status(next == null ? 200 : next);
        });
    }

    /** Full control; the function sees the delivery with status {@link #PENDING} and may block. */
    public void answerWith(Function<Delivery, Answer> fn) {
        this.script = fn;
    }

    /** Forgets deliveries and goes back to answering 200. */
    public void reset() {
        script = d -> Answer.status(200);
        synchronized (deliveries) {
            deliveries.clear();
        }
    }

    /** Every request so far, in arrival order. */
    public List<Delivery> deliveries() {
        synchronized (deliveries) {
            return List.copyOf(deliveries);
        }
    }

    /** The deliveries answered with a 2xx status. */
    public List<Delivery> acknowledged() {
        return deliveries().stream().filter(Delivery::acknowledged).toList();
    }

    /** Waits until {@code n} deliveries have arrived; fails (ConditionTimeoutException) after {@code timeout}. */
    public void awaitDeliveries(int n, Duration timeout) {
        await(n + " webhook deliveries")
                .atMost(timeout)
                .pollInterval(POLL)
                .until(() -> deliveries().size() >= n);
    }

    /**
     * Waits until every delivery so far has its answer recorded (none {@link #PENDING}): the status is recorded after
     * the answer was written, so a sender can read its answer before {@link #deliveries()} shows it.
     */
    public void awaitAnswered(Duration timeout) {
        await("every webhook delivery's answer recorded")
                .atMost(timeout)
                .pollInterval(POLL)
                .until(() -> deliveries().stream().noneMatch(d -> d.status() == PENDING));
    }

    /** Waits until {@code n} deliveries were answered 2xx; fails after {@code timeout}. */
    public void awaitAcknowledged(int n, Duration timeout) {
        await(n + " acknowledged webhook deliveries")
                .atMost(timeout)
                .pollInterval(POLL)
                .until(() -> acknowledged().size() >= n);
    }

    /** Whether the delivery carries a valid Standard Webhooks signature for this {@code whsec_...} secret. */
    public static boolean verify(String secret, Delivery d) {
        if (d.webhookId() == null || d.webhookTimestamp() == null || d.webhookSignature() == null) {
            return false;
        }
        try {
            new Webhook(secret)
                    .verify(
                            d.body(),
                            Map.of(
                                    "webhook-id", List.of(d.webhookId()),
                                    "webhook-timestamp", List.of(d.webhookTimestamp()),
                                    "webhook-signature", List.of(d.webhookSignature())));
            return true;
        } catch (Exception e) { // WebhookVerificationException, or a malformed secret
            return false;
        }
    }

    /** Cuts answer delays short (dropping those connections), waits up to a second for handlers, stops. */
    @Override
    public void close() {
        closed.countDown();
        http.stop();
    }

    private void answer(HttpExchange ex) throws IOException {
        Instant receivedAt = Instant.now();
        String body = new String(ex.getRequestBody().readAllBytes(), UTF_8);
        Map<String, List<String>> headers = new HashMap<>();
        ex.getRequestHeaders().forEach((name, values) -> headers.put(name.toLowerCase(), List.copyOf(values)));
        Delivery delivery = new Delivery(
                ex.getRequestURI().getPath(),
                ex.getRequestHeaders().getFirst("webhook-id"),
                ex.getRequestHeaders().getFirst("webhook-timestamp"),
                ex.getRequestHeaders().getFirst("webhook-signature"),
                body,
                parse(body),
                Map.copyOf(headers),
                PENDING,
                receivedAt);
        int index;
        synchronized (deliveries) {
            index = deliveries.size();
            deliveries.add(delivery);
        }
        Answer answer;
        try {
            answer = Objects.requireNonNull(script.apply(delivery), "script returned null");
        } catch (RuntimeException e) {
            log.warn("webhook receiver script failed", e);
            answer = Answer.status(500).body("receiver script failed: " + e);
        }
        try {
            if (closed.await(answer.delay().toNanos(), TimeUnit.NANOSECONDS)) {
                throw new IOException("webhook receiver closed"); // the server drops the connection
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", e);
        }
        int status = answer.status();
        try {
            send(ex, answer);
        } catch (IOException e) {
            status = SENDER_GONE;
            throw e;
        } finally {
            synchronized (deliveries) {
                if (index < deliveries.size() && deliveries.get(index) == delivery) {
                    deliveries.set(index, delivery.withStatus(status));
                }
            }
        }
    }

    /** Headers, then the body in two writes: the second write is what reveals a sender that already left. */
    private static void send(HttpExchange ex, Answer answer) throws IOException {
        answer.headers().forEach((name, value) -> ex.getResponseHeaders().set(name, value));
        byte[] bytes = answer.body() == null ? new byte[0] : answer.body().getBytes(UTF_8);
        boolean noBody = bytes.length == 0 || answer.status() == 204 || answer.status() == 304;
        ex.sendResponseHeaders(answer.status(), noBody ? -1 : bytes.length);
        OutputStream out = ex.getResponseBody();
        if (!noBody) {
            int half = bytes.length / 2;
            out.write(bytes, 0, half);
            out.flush();
            out.write(bytes, half, bytes.length - half);
        }
        out.close();
    }

    private static JsonNode parse(String body) {
        try {
            return body.isBlank() ? null : JsonMapper.shared().readTree(body);
        } catch (JacksonException e) {
            return null;
        }
    }
}
