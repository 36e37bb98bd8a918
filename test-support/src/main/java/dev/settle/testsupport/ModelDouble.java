package dev.settle.testsupport;

import com.sun.net.httpserver.HttpExchange;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import tools.jackson.core.JacksonException;

import java.io.IOException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Function;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.awaitility.Awaitility.await;

/**
 * A real HTTP server speaking OpenAI's {@code POST /v1/chat/completions} (JSON and SSE streaming), scripted per
 * request, on 127.0.0.1 and a free port; every request runs on its own virtual thread.
 *
 * <p>Clients reach the server through a raw-socket front ({@link ClientFront}) that always reads from the client, so
 * the double notices a client that closes its connection in every phase of an answer: during a {@code delay} or a
 * {@link ModelResponse#hang()} (before a byte was sent), after the headers of a stream
 * ({@link ModelResponse#firstEventDelay}) and mid-stream. {@link #cancelledCount()} counts those requests and
 * {@link #disconnects()} says when each one's client left and how much of the answer it had received. A client
 * leaving after the last byte of an answer is not counted.
 */
public final class ModelDouble implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ModelDouble.class);
    private static final Duration POLL = Duration.ofMillis(5);
    /**
     * How long a pause waits before it looks again whether the double closed (a client leaving wakes a watched pause at
     * once): the double's own close is noticed this late at most. Not {@link #POLL}: ten thousand requests pausing
     * 60 s would wake two million times a second.
     */
    private static final Duration PAUSE_STEP = Duration.ofMillis(100);

    private static final String PATH = "/v1/chat/completions";

    private final List<ModelRequest> requests = new CopyOnWriteArrayList<>();
    private final AtomicInteger sequence = new AtomicInteger();
    private final AtomicInteger cancelled = new AtomicInteger();
    private volatile java.time.Instant lastCancelledAt;
    private final CountDownLatch closed = new CountDownLatch(1);
    private volatile CountDownLatch hangGate = new CountDownLatch(1);
    private volatile Function<ModelRequest, ModelResponse> script = ModelDouble::echo;
    private final List<Disconnect> disconnects = new CopyOnWriteArrayList<>();
    private final PrefixCache prefixCache = new PrefixCache();
    private volatile boolean simulatePrefixCache;
    private final LocalHttpServer http;
    /** Null when unwatched ({@link #startUnwatched()}). */
    private final ClientFront front;

    /**
     * A request whose client closed the connection before the answer was complete.
     *
     * @param sequence   the request's {@link ModelRequest#sequence()}
     * @param at         when the double saw the connection close
     * @param bytesSent  bytes of this answer (headers included) that had reached the client: 0 = closed while silent
     * @param eventsSent SSE events of this answer written before the client left
     */
    public record Disconnect(int sequence, java.time.Instant at, long bytesSent, int eventsSent) {}

    private ModelDouble(boolean watched) {
        this.http = LocalHttpServer.start(this::answer);
        this.front = watched ? ClientFront.start(http.port()) : null;
    }

    public static ModelDouble start() {
        return new ModelDouble(true);
    }

    /**
     * A double without the front: clients connect to the server directly, one socket of this process per connection
     * instead of three (the front's two and the server's), so that ten thousand calls held open fit in the process's
     * open-file limit. It sees a client leave only when a write fails: {@link #cancelledCount()} and
     * {@link #disconnects()} miss the clients that leave while it is silent.
     */
    public static ModelDouble startUnwatched() {
        return new ModelDouble(false);
    }

    /** {@code http://127.0.0.1:PORT/v1}, the base URL for an OpenAI client. */
    public String baseUrl() {
        return "http://127.0.0.1:" + (front != null ? front.port() : http.port()) + "/v1";
    }

    /** The default script: {@code "echo: " + } the user text since the last assistant message. */
    public static ModelResponse echo(ModelRequest request) {
        return ModelResponse.text("echo: " + request.allUserTextSinceLastAssistant());
    }

    /** Scripts every following request; the function runs on the request's thread and may block. */
    public void respondWith(Function<ModelRequest, ModelResponse> script) {
        this.script = script;
    }

    public List<ModelRequest> requests() {
        return List.copyOf(requests);
    }

    public int requestCount() {
        return requests.size();
    }

    /** Requests whose client was found gone while the double answered (see the class comment for the limits). */
    public int cancelledCount() {
        return cancelled.get();
    }

    /**
     * Simulates a provider's prompt cache (OpenAI's automatic caching, vLLM's prefix caching): every later answer
     * reports {@code cached_tokens} = the longest common prefix of its messages with those of any earlier request
     * answered while simulating,
     * at {@value PrefixCache#CHARS_PER_TOKEN} characters per token (unless its script set a cached figure).
     */
    public void simulatePrefixCache(boolean on) {
        simulatePrefixCache = on;
    }

    /** Requests whose client left before their answer was complete, in the order the double noticed. */
    public List<Disconnect> disconnects() {
        return List.copyOf(disconnects);
    }

    /** The disconnect of request {@code sequence}, once the double has noticed it. */
    public java.util.Optional<Disconnect> disconnect(int sequence) {
        return disconnects.stream().filter(d -> d.sequence() == sequence).findFirst();
    }

    /** When the double last noticed a client had closed its connection before the answer was complete, or null. */
    public java.time.Instant lastCancelledAt() {
        return lastCancelledAt;
    }

    /** Waits until {@code n} requests have arrived; fails (ConditionTimeoutException) after {@code timeout}. */
    public void awaitRequests(int n, Duration timeout) {
        await(n + " model request(s)").atMost(timeout).pollInterval(POLL).until(() -> requests.size() >= n);
    }

    /** Waits until {@code n} streams were cancelled by their clients; fails after {@code timeout}. */
    public void awaitCancelled(int n, Duration timeout) {
        await(n + " cancelled stream(s)").atMost(timeout).pollInterval(POLL).until(() -> cancelled.get() >= n);
    }

    /**
     * Lets every request currently hanging answer 503 (a hanging request whose client left is counted as cancelled at
     * once, without waiting for this).
     */
    public void releaseHangs() {
        CountDownLatch gate = hangGate;
        hangGate = new CountDownLatch(1);
        gate.countDown();
    }

    /** Forgets recorded requests and cancellations, restarts sequence numbers, restores the echo script. */
    public void reset() {
        script = ModelDouble::echo;
        requests.clear();
        sequence.set(0);
        cancelled.set(0);
        lastCancelledAt = null;
        disconnects.clear();
        prefixCache.clear();
        simulatePrefixCache = false;
    }

    /**
     * Releases hanging requests (they answer 503), cuts delays and streams short (their connections are dropped),
     * waits up to a second for the handlers to finish, then stops the server.
     */
    @Override
    public void close() {
        if (closed.getCount() == 0) {
            return;
        }
        closed.countDown();
        hangGate.countDown();
        http.stop();
        if (front != null) {
            front.close();
        }
    }

    private void answer(HttpExchange ex) throws IOException {
        String body = new String(ex.getRequestBody().readAllBytes(), UTF_8);
        if (!PATH.equals(ex.getRequestURI().getPath()) || !"POST".equals(ex.getRequestMethod())) {
            CompletionWriter.sendJson(
                    ex,
                    404,
                    OpenAiJson.error(
                            404,
                            "no such endpoint: " + ex.getRequestMethod() + " "
                                    + ex.getRequestURI().getPath()),
                    null);
            return;
        }
        ModelRequest request;
        try {
            request = ModelRequest.parse(sequence.incrementAndGet(), body);
        } catch (JacksonException e) {
            CompletionWriter.sendJson(ex, 400, OpenAiJson.error(400, "body is not JSON: " + e.getMessage()), null);
            return;
        }
        requests.add(request);
        // compared with every earlier request under one lock: only while simulating (ten thousand calls would queue)
        int cached = simulatePrefixCache ? prefixCache.remember("", request) : 0;
        ModelResponse response;
        try {
            response = Objects.requireNonNull(script.apply(request), "script returned null");
        } catch (RuntimeException e) {
            log.warn("model double script failed on request {}", request.sequence(), e);
            response = ModelResponse.error(500, "model double script failed: " + e);
        }
        if (simulatePrefixCache && response.cachedTokens == null) {
            response = response.cachedTokens(cached);
        }
        ClientFront.Connection connection =
                front == null ? null : front.connection(ex.getRemoteAddress().getPort());
        long bytesBefore = connection == null ? 0 : connection.bytesToClient();
        AtomicInteger events = new AtomicInteger();
        CompletionWriter.Outcome outcome = CompletionWriter.write(ex, request, response, timing(connection, events));
        if (outcome != CompletionWriter.Outcome.COMPLETED && connection != null) {
            awaitQuietly(connection, outcome == CompletionWriter.Outcome.CLIENT_GONE);
        }
        java.time.Instant left = connection == null ? null : connection.clientLeftAt();
        if (outcome == CompletionWriter.Outcome.CLIENT_GONE
                || (outcome == CompletionWriter.Outcome.ABORTED && left != null)) {
            java.time.Instant at = left != null ? left : java.time.Instant.now();
            disconnects.add(new Disconnect(
                    request.sequence(),
                    at,
                    connection == null ? 0 : connection.bytesToClient() - bytesBefore,
                    events.get()));
            lastCancelledAt = at;
            cancelled.incrementAndGet();
            throw new IOException("client closed the connection"); // the server then drops it
        }
        if (outcome == CompletionWriter.Outcome.ABORTED) {
            throw new IOException("model double closed"); // drop without finishing the answer
        }
        ex.close();
    }

    /** A failed write may be seen before the front has marked the client gone: give it a moment. */
    private static void awaitQuietly(ClientFront.Connection connection, boolean expectLeft) {
        if (!expectLeft) {
            return;
        }
        try {
            connection.awaitClientLeft(TimeUnit.MILLISECONDS.toNanos(200));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Pauses end when the double closes or the client leaves. */
    private CompletionWriter.Timing timing(ClientFront.Connection connection, AtomicInteger events) {
        return new CompletionWriter.Timing() {
            @Override
            public boolean pause(Duration duration) {
                long end = System.nanoTime() + duration.toNanos();
                try {
                    for (long left = duration.toNanos(); ; left = end - System.nanoTime()) {
                        if (closed.getCount() == 0 || (connection != null && connection.clientLeftAt() != null)) {
                            return false;
                        }
                        if (left <= 0) {
                            return true;
                        }
                        long step = Math.min(left, PAUSE_STEP.toNanos());
                        // unwatched, each sleeps on its own: thousands of timed waits on the one closed latch would
                        // each clean its queue when they time out
                        if (connection != null) {
                            if (connection.awaitClientLeft(step)) {
                                return false;
                            }
                        } else {
                            Thread.sleep(Duration.ofNanos(step));
                        }
                    }
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }

            @Override
            public boolean awaitHangRelease() {
                CountDownLatch gate = hangGate; // opened by releaseHangs() (which swaps in a fresh gate) and by close()
                try {
                    while (!gate.await(POLL.toNanos(), TimeUnit.NANOSECONDS)) {
                        if (connection != null && connection.clientLeftAt() != null) {
                            return false;
                        }
                    }
                    return closed.getCount() != 0 || connection == null || connection.clientLeftAt() == null;
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }

            @Override
            public void eventWritten() {
                events.incrementAndGet();
            }
        };
    }
}
