package dev.settle.agent.model;

import java.io.IOException;
import java.io.InputStream;
import java.util.concurrent.Future;
import java.util.function.Supplier;

/**
 * The cancel handle of one streamed model call, reachable before the model has said anything. langchain4j's own
 * {@code StreamingHandle} arrives only with the first fragment; this one is registered by {@link ModelHttpClient}
 * when it sends the request, so {@link #cancel()} closes the exchange in every phase: before the response headers
 * (the {@code sendAsync} future is cancelled, which aborts the exchange), before the first event and mid-stream (the
 * response body is closed, which closes the connection and wakes the reader).
 *
 * <p>langchain4j 1.19's OpenAI streaming model calls {@code HttpClient.execute} on the thread that called
 * {@code chat(...)}, so the handle travels as a thread-local set around that call ({@link #around}).
 */
final class ModelCall {
    private static final ThreadLocal<ModelCall> CURRENT = new ThreadLocal<>();

    private volatile boolean cancelled;
    private Future<?> exchange;
    private InputStream body;

    /** Runs {@code chat} with this call as the one {@link ModelHttpClient} registers its exchange with. */
    <T> T around(Supplier<T> chat) {
        ModelCall outer = CURRENT.get();
        CURRENT.set(this);
        try {
            return chat.get();
        } finally {
            if (outer == null) {
                CURRENT.remove();
            } else {
                CURRENT.set(outer);
            }
        }
    }

    /** The call of this thread; a fresh one nobody cancels when none is set. */
    static ModelCall current() {
        ModelCall call = CURRENT.get();
        return call != null ? call : new ModelCall();
    }

    boolean cancelled() {
        return cancelled;
    }

    /** Closes the exchange now, whatever its phase; what is attached later is closed as it arrives. */
    void cancel() {
        Future<?> f;
        InputStream in;
        synchronized (this) {
            cancelled = true;
            f = exchange;
            in = body;
        }
        if (f != null) {
            f.cancel(true);
        }
        close(in);
    }

    void exchange(Future<?> future) {
        synchronized (this) {
            exchange = future;
            if (!cancelled) {
                return;
            }
        }
        future.cancel(true);
    }

    void body(InputStream in) {
        synchronized (this) {
            body = in;
            if (!cancelled) {
                return;
            }
        }
        close(in);
    }

    private static void close(InputStream in) {
        if (in == null) {
            return;
        }
        try {
            in.close();
        } catch (IOException ignored) {
            // closing is all that is wanted
        }
    }
}
