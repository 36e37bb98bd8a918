package dev.settle.testsupport;

import com.sun.net.httpserver.HttpExchange;

import java.io.IOException;
import java.io.OutputStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static java.nio.charset.StandardCharsets.UTF_8;

/** Writes one scripted {@link ModelResponse} to one exchange: as a JSON completion, an error, or an SSE stream. */
final class CompletionWriter {
    enum Outcome {
        COMPLETED,
        CLIENT_GONE,
        ABORTED
    }

    /**
     * The double's clock for one exchange: pauses end early (returning false) when the double closes or the client
     * leaves; every SSE event written is reported.
     */
    interface Timing {
        boolean pause(Duration duration);

        /** @return false when the wait ended because the double closed or the client left */
        boolean awaitHangRelease();

        void eventWritten();
    }

    private CompletionWriter() {}

    static Outcome write(HttpExchange ex, ModelRequest req, ModelResponse resp, Timing timing) {
        if (!timing.pause(resp.delay)) {
            return Outcome.ABORTED;
        }
        try {
            switch (resp.kind) {
                case HANG -> {
                    if (!timing.awaitHangRelease()) {
                        return Outcome.ABORTED;
                    }
                    sendJson(ex, 503, OpenAiJson.error(503, "model double released a hanging request"), null);
                }
                case ERROR ->
                    sendJson(ex, resp.status, OpenAiJson.error(resp.status, resp.errorMessage), resp.retryAfter);
                default -> {
                    if (req.stream()) {
                        return stream(ex, req, resp, timing);
                    }
                    sendJson(ex, 200, OpenAiJson.completion(req, resp), resp.retryAfter);
                }
            }
            return Outcome.COMPLETED;
        } catch (IOException e) {
            return Outcome.CLIENT_GONE;
        }
    }

    /**
     * Sends headers and body with a flush in between: after the peer closed, the first write usually still
     * succeeds (and draws a reset), so a second one is what reveals the closed connection.
     */
    static void sendJson(HttpExchange ex, int status, String json, String retryAfter) throws IOException {
        byte[] bytes = json.getBytes(UTF_8);
        ex.getResponseHeaders().set("Content-Type", "application/json");
        if (retryAfter != null) {
            ex.getResponseHeaders().set("Retry-After", retryAfter);
        }
        ex.sendResponseHeaders(status, bytes.length);
        OutputStream out = ex.getResponseBody();
        int half = bytes.length / 2;
        out.write(bytes, 0, half);
        out.flush();
        out.write(bytes, half, bytes.length - half);
        out.close();
    }

    private static Outcome stream(HttpExchange ex, ModelRequest req, ModelResponse resp, Timing timing)
            throws IOException {
        ex.getResponseHeaders().set("Content-Type", "text/event-stream; charset=utf-8");
        ex.getResponseHeaders().set("Cache-Control", "no-cache");
        ex.sendResponseHeaders(200, 0);
        OutputStream out = ex.getResponseBody();
        out.flush(); // the headers go out now, before any event
        List<String> events = new ArrayList<>(OpenAiJson.chunks(req, resp));
        events.add("[DONE]");
        for (int i = 0; i < events.size(); i++) {
            if (!timing.pause(i == 0 ? resp.firstEventDelay : resp.chunkDelay)) {
                return Outcome.ABORTED;
            }
            out.write(("data: " + events.get(i) + "\n\n").getBytes(UTF_8));
            out.flush();
            timing.eventWritten();
        }
        out.close();
        return Outcome.COMPLETED;
    }
}
