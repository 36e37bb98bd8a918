package dev.settle.agent.model;

import dev.langchain4j.exception.HttpException;
import dev.langchain4j.exception.TimeoutException;
import dev.langchain4j.http.client.HttpClient;
import dev.langchain4j.http.client.HttpClientBuilder;
import dev.langchain4j.http.client.HttpRequest;
import dev.langchain4j.http.client.SuccessfulHttpResponse;
import dev.langchain4j.http.client.sse.ServerSentEvent;
import dev.langchain4j.http.client.sse.ServerSentEventContext;
import dev.langchain4j.http.client.sse.ServerSentEventListener;
import dev.langchain4j.http.client.sse.ServerSentEventParser;

import java.io.IOException;
import java.io.InputStream;
import java.net.URI;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;

import static dev.langchain4j.http.client.sse.ServerSentEventListenerUtils.ignoringExceptions;
import static java.nio.charset.StandardCharsets.UTF_8;

/**
 * The model's HTTP client, on {@code java.net.http} like langchain4j's own {@code JdkHttpClient} and doing the same
 * exchange, except that a refused request fails with a {@link StatusException} that keeps the response's
 * {@code Retry-After}. langchain4j 1.19's {@link HttpException} carries only the status
 * and the body, so without this the retry policy of {@link ModelStream} could not honour the header. A streamed
 * exchange can be closed at any moment through its {@link ModelCall}.
 */
final class ModelHttpClient implements HttpClient {

    /** A non-2xx answer to a streamed request: status, body (the server's message) and Retry-After (or null). */
    static final class StatusException extends HttpException {
        private final String retryAfter;

        StatusException(int statusCode, String body, String retryAfter) {
            super(statusCode, body);
            this.retryAfter = retryAfter;
        }

        String retryAfter() {
            return retryAfter;
        }
    }

    static final class Builder implements HttpClientBuilder {
        private Duration connectTimeout;
        private Duration readTimeout;

        @Override
        public Duration connectTimeout() {
            return connectTimeout;
        }

        @Override
        public Builder connectTimeout(Duration timeout) {
            this.connectTimeout = timeout;
            return this;
        }

        @Override
        public Duration readTimeout() {
            return readTimeout;
        }

        @Override
        public Builder readTimeout(Duration timeout) {
            this.readTimeout = timeout;
            return this;
        }

        @Override
        public ModelHttpClient build() {
            return new ModelHttpClient(this);
        }
    }

    private final java.net.http.HttpClient http;
    private final Duration readTimeout;

    private ModelHttpClient(Builder builder) {
        java.net.http.HttpClient.Builder http = java.net.http.HttpClient.newBuilder();
        if (builder.connectTimeout != null) {
            http.connectTimeout(builder.connectTimeout);
        }
        this.http = http.build();
        this.readTimeout = builder.readTimeout;
    }

    static Builder builder() {
        return new Builder();
    }

    @Override
    public SuccessfulHttpResponse execute(HttpRequest request) {
        HttpResponse<InputStream> response;
        try {
            response = http.send(toJdk(request), HttpResponse.BodyHandlers.ofInputStream());
        } catch (HttpTimeoutException e) {
            throw new TimeoutException(e);
        } catch (IOException e) {
            throw new RuntimeException(e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new RuntimeException(e);
        }
        String body = readBody(response);
        if (response.statusCode() < 200 || response.statusCode() > 299) {
            throw new StatusException(
                    response.statusCode(),
                    body,
                    response.headers().firstValue("Retry-After").orElse(null));
        }
        return SuccessfulHttpResponse.builder()
                .statusCode(response.statusCode())
                .headers(response.headers().map())
                .body(body)
                .build();
    }

    /**
     * Streams on {@code java.net.http}, registering the exchange and its body with the thread's {@link ModelCall} so
     * that it can be closed before the first fragment. After a cancel, nothing more reaches the listener: the
     * caller has settled the outcome, and the errors the closed exchange raises are its own doing.
     */
    @Override
    public void execute(HttpRequest request, ServerSentEventParser parser, ServerSentEventListener listener) {
        ModelCall call = ModelCall.current();
        ServerSentEventListener live = new UnlessCancelled(listener, call);
        CompletableFuture<HttpResponse<InputStream>> exchange =
                http.sendAsync(toJdk(request), HttpResponse.BodyHandlers.ofInputStream());
        call.exchange(exchange);
        exchange.thenAccept(response -> {
                    call.body(response.body());
                    if (response.statusCode() < 200 || response.statusCode() > 299) {
                        StatusException refused = new StatusException(
                                response.statusCode(),
                                readBody(response),
                                response.headers().firstValue("Retry-After").orElse(null));
                        ignoringExceptions(() -> live.onError(refused));
                        return;
                    }
                    SuccessfulHttpResponse opened = SuccessfulHttpResponse.builder()
                            .statusCode(response.statusCode())
                            .headers(response.headers().map())
                            .build();
                    ignoringExceptions(() -> live.onOpen(opened));
                    try (InputStream in = response.body()) {
                        parser.parse(in, live);
                        ignoringExceptions(live::onClose);
                    } catch (IOException | RuntimeException e) {
                        ignoringExceptions(() -> live.onError(e));
                    }
                })
                .exceptionally(e -> {
                    Throwable cause = e instanceof CompletionException && e.getCause() != null ? e.getCause() : e;
                    Throwable error = cause instanceof HttpTimeoutException ? new TimeoutException(cause) : cause;
                    ignoringExceptions(() -> live.onError(error));
                    return null;
                });
    }

    /** Passes events on until the call is cancelled, then drops them. */
    private record UnlessCancelled(ServerSentEventListener listener, ModelCall call)
            implements ServerSentEventListener {
        @Override
        public void onOpen(SuccessfulHttpResponse response) {
            if (!call.cancelled()) {
                listener.onOpen(response);
            }
        }

        @Override
        public void onEvent(ServerSentEvent event) {
            if (!call.cancelled()) {
                listener.onEvent(event);
            }
        }

        @Override
        public void onEvent(ServerSentEvent event, ServerSentEventContext context) {
            if (!call.cancelled()) {
                listener.onEvent(event, context);
            }
        }

        @Override
        public void onError(Throwable error) {
            if (!call.cancelled()) {
                listener.onError(error);
            }
        }

        @Override
        public void onClose() {
            if (!call.cancelled()) {
                listener.onClose();
            }
        }
    }

    private java.net.http.HttpRequest toJdk(HttpRequest request) {
        if (!request.formDataFields().isEmpty() || !request.formDataFiles().isEmpty()) {
            throw new UnsupportedOperationException("multipart requests are not streamed");
        }
        java.net.http.HttpRequest.Builder b =
                java.net.http.HttpRequest.newBuilder().uri(URI.create(request.url()));
        request.headers().forEach((name, values) -> values.forEach(v -> b.header(name, v)));
        b.method(
                request.method().name(),
                request.body() == null
                        ? java.net.http.HttpRequest.BodyPublishers.noBody()
                        : RequestBody.of(request.body()));
        if (readTimeout != null) {
            b.timeout(readTimeout);
        }
        return b.build();
    }

    private static String readBody(HttpResponse<InputStream> response) {
        try (InputStream in = response.body()) {
            return new String(in.readAllBytes(), UTF_8);
        } catch (IOException e) {
            return "(body unreadable: " + e + ")";
        }
    }
}
