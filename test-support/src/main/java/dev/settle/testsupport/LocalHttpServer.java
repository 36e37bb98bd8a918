package dev.settle.testsupport;

import com.sun.net.httpserver.HttpExchange;
import com.sun.net.httpserver.HttpServer;
import org.awaitility.core.ConditionTimeoutException;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicInteger;

import static org.awaitility.Awaitility.await;

/**
 * The HTTP server of a test double: a free port on 127.0.0.1, one virtual thread per request, and a count of
 * the requests in flight so that {@link #stop()} lets them finish first.
 */
final class LocalHttpServer {
    /** Answers one request on its own virtual thread. */
    interface Handler {
        void handle(HttpExchange exchange) throws IOException;
    }

    static {
        // The JDK's server leaves Nagle's algorithm on unless told otherwise (read once, when its first server starts):
        // a second small write (an SSE event after the first) then waits for the peer's delayed ACK, up to 40 ms.
        System.setProperty("sun.net.httpserver.nodelay", "true");
    }

    private static final Duration POLL = Duration.ofMillis(5);
    private final HttpServer server;
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final AtomicInteger inFlight = new AtomicInteger();

    private LocalHttpServer(HttpServer server) {
        this.server = server;
    }

    static LocalHttpServer start(Handler handler) {
        try {
            LocalHttpServer http = new LocalHttpServer(HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0));
            http.server.setExecutor(http.executor);
            http.server.createContext("/", exchange -> {
                http.inFlight.incrementAndGet();
                try {
                    handler.handle(exchange);
                } finally {
                    http.inFlight.decrementAndGet();
                }
            });
            http.server.start();
            return http;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    int port() {
        return server.getAddress().getPort();
    }

    /** {@code http://127.0.0.1:PORT} followed by {@code path}. */
    String url(String path) {
        return "http://127.0.0.1:" + server.getAddress().getPort() + path;
    }

    /** Waits up to a second for the requests in flight to finish, then stops the server (cutting the rest). */
    void stop() {
        try {
            await().atMost(Duration.ofSeconds(1)).pollInterval(POLL).until(() -> inFlight.get() == 0);
        } catch (ConditionTimeoutException e) {
            // stopping the server cuts the handlers still running
        }
        server.stop(0);
        executor.shutdownNow();
    }
}
