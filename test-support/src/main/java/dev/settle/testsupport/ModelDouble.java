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
 * <p>Cancellation detection is best effort: {@link #cancelledCount()} counts requests whose connection turned out
 * to be closed by the client when the double wrote to it. A stream is checked at every chunk write; a
 * {@code delay} only when it ends and the answer is written; a {@link ModelResponse#hang()} only when it is
 * released ({@link #releaseHangs()}, {@link #close()}), because without writing there is no way to notice the
 * client left. A client leaving after the last write is not counted.
 */
public final class ModelDouble implements AutoCloseable {
    private static final Logger log = LoggerFactory.getLogger(ModelDouble.class);
    private static final Duration POLL = Duration.ofMillis(5);
    private static final String PATH = "/v1/chat/completions";

    private final List<ModelRequest> requests = new CopyOnWriteArrayList<>();
    private final AtomicInteger sequence = new AtomicInteger();
    private final AtomicInteger cancelled = new AtomicInteger();
    private volatile java.time.Instant lastCancelledAt;
    private final CountDownLatch closed = new CountDownLatch(1);
    private volatile CountDownLatch hangGate = new CountDownLatch(1);
    private volatile Function<ModelRequest, ModelResponse> script = ModelDouble::echo;
    private final LocalHttpServer http;

    private ModelDouble() {
        this.http = LocalHttpServer.start(this::answer);
    }

    public static ModelDouble start() {
        return new ModelDouble();
    }

    /** {@code http://127.0.0.1:PORT/v1}, the base URL for an OpenAI client. */
    public String baseUrl() {
        return http.url("/v1");
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

    /** When the double last noticed a client had closed its stream (at a chunk write), or null. */
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
     * Lets every request currently hanging answer 503, or be counted as cancelled if its client has gone. A client
     * that gave up only milliseconds ago may not have closed its connection yet; then the 503 goes through.
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
        ModelResponse response;
        try {
            response = Objects.requireNonNull(script.apply(request), "script returned null");
        } catch (RuntimeException e) {
            log.warn("model double script failed on request {}", request.sequence(), e);
            response = ModelResponse.error(500, "model double script failed: " + e);
        }
        switch (CompletionWriter.write(ex, request, response, timing())) {
            case COMPLETED -> ex.close();
            case CLIENT_GONE -> {
                lastCancelledAt = java.time.Instant.now();
                cancelled.incrementAndGet();
                throw new IOException("client closed the connection"); // the server then drops it
            }
            case ABORTED -> throw new IOException("model double closed"); // drop without finishing the answer
        }
    }

    private CompletionWriter.Timing timing() {
        return new CompletionWriter.Timing() {
            @Override
            public boolean pause(Duration duration) {
                try {
                    return !closed.await(duration.toNanos(), TimeUnit.NANOSECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                    return false;
                }
            }

            @Override
            public void awaitHangRelease() {
                try {
                    hangGate.await(); // opened by releaseHangs() (which swaps in a fresh gate) and by close()
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
        };
    }
}
