package dev.settle.agent.model;

import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.exception.HttpException;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.PartialResponse;
import dev.langchain4j.model.chat.response.PartialResponseContext;
import dev.langchain4j.model.chat.response.PartialToolCall;
import dev.langchain4j.model.chat.response.PartialToolCallContext;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.chat.response.StreamingHandle;
import dev.langchain4j.model.openai.OpenAiTokenUsage;
import dev.langchain4j.model.output.TokenUsage;
import dev.settle.agent.AgentSettings;
import dev.settle.agent.lease.LeaseLostException;
import dev.settle.agent.lease.TurnControl;
import dev.settle.schema.Causes;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;
import org.springframework.stereotype.Component;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * One streamed model call of a turn: every text delta goes to the turn's {@link TurnStream} as it arrives.
 * A failure before the first delta is retried, a bounded number of times, only when a retry can succeed: a
 * connection error or timeout, or HTTP 408, 409, 429 or 5xx. The wait before a retry is drawn uniformly from
 * [backoff / 2, backoff] (backoff doubled per attempt), or the server's {@code Retry-After}
 * when it asks for longer. Any other 4xx (a bad request, a bad key) fails at once with the server's message, and
 * so does a Retry-After longer than the call timeout. A failure after output was streamed is not retried (that
 * would stream the text twice). An interrupt closes the HTTP exchange at once, in every phase: before the response
 * headers, before the first token and mid-stream ({@link ModelCall}).
 */
@Component
public class ModelStream {
    private static final Logger log = LoggerFactory.getLogger(ModelStream.class);

    /**
     * The model's message and its token usage as the server reported it: prompt tokens, the part of them served from
     * the provider's prompt cache (OpenAI's {@code usage.prompt_tokens_details.cached_tokens}, which compatible servers
     * such as vLLM report too; 0 when absent), and completion tokens.
     */
    public record Result(AiMessage message, int promptTokens, int cachedTokens, int completionTokens) {}

    public static class ModelFailedException extends RuntimeException {
        ModelFailedException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private static final tools.jackson.databind.json.JsonMapper JSON =
            tools.jackson.databind.json.JsonMapper.builder().build();

    private final StreamingChatModel model;
    private final AgentSettings.Llm settings;

    public ModelStream(StreamingChatModel model, AgentSettings settings) {
        this.model = model;
        this.settings = settings.llm();
    }

    /** @param deltas receives every text delta, in order */
    public Result call(
            long sessionId,
            List<ChatMessage> messages,
            List<ToolSpecification> tools,
            TurnControl control,
            Consumer<String> deltas,
            AtomicInteger streamedChars) {
        Duration backoff = settings.backoff();
        Throwable last = null;
        for (int attempt = 1; attempt <= settings.maxAttempts(); attempt++) {
            checkStillWanted(control);
            AtomicBoolean output = new AtomicBoolean();
            try {
                return once(messages, tools, control, deltas, streamedChars, output);
            } catch (TurnControl.Interrupted | LeaseLostException e) {
                throw e;
            } catch (Exception e) {
                last = e instanceof ExecutionException ? e.getCause() : e;
                log.warn(
                        "model call {}/{} for session {} failed: {}",
                        attempt,
                        settings.maxAttempts(),
                        sessionId,
                        last.toString());
                if (output.get()) {
                    throw new ModelFailedException("model stream broke after output was streamed: " + last, last);
                }
            }
            Retry retry = retry(last);
            if (retry.refusal() != null) {
                throw new ModelFailedException(retry.refusal(), last);
            }
            if (attempt < settings.maxAttempts()) {
                Duration jittered = Duration.ofNanos(
                        backoff.toNanos() / 2 + ThreadLocalRandom.current().nextLong(backoff.toNanos() / 2 + 1));
                sleep(retry.after() != null && retry.after().compareTo(jittered) > 0 ? retry.after() : jittered);
                backoff = backoff.multipliedBy(2);
            }
        }
        throw new ModelFailedException("model failed " + settings.maxAttempts() + " times: " + describe(last), last);
    }

    /**
     * What to do after a failed attempt: {@code refusal} (the turn's reason) when no retry can succeed, else the
     * server's Retry-After (null: none).
     */
    record Retry(String refusal, Duration after) {}

    Retry retry(Throwable failure) {
        HttpException http = Causes.first(failure, HttpException.class);
        if (http == null) {
            boolean transport = Causes.first(
                            failure,
                            t -> t instanceof java.io.IOException
                                    || t instanceof java.util.concurrent.TimeoutException
                                    || t instanceof dev.langchain4j.exception.TimeoutException
                                    || t instanceof java.nio.channels.UnresolvedAddressException)
                    != null;
            return transport ? new Retry(null, null) : new Retry("model call failed: " + describe(failure), null);
        }
        int status = http.statusCode();
        if (status != 408 && status != 409 && status != 429 && status < 500) {
            return new Retry("model refused the request (HTTP " + status + "): " + serverMessage(http), null);
        }
        Duration after = http instanceof ModelHttpClient.StatusException s && s.retryAfter() != null
                ? retryAfter(s.retryAfter())
                : null;
        if (after != null && after.compareTo(settings.timeout()) > 0) {
            return new Retry(
                    "model unavailable (HTTP " + status + "), Retry-After " + s(after) + " exceeds the "
                            + s(settings.timeout()) + " call timeout: " + serverMessage(http),
                    null);
        }
        return new Retry(null, after);
    }

    /** RFC 9110 Retry-After: delta-seconds or an HTTP-date (a past date means now); null when unreadable. */
    static Duration retryAfter(String value) {
        String v = value.trim();
        if (!v.isEmpty() && v.chars().allMatch(Character::isDigit)) {
            return v.length() > 12
                    ? Duration.ofSeconds(Long.MAX_VALUE / 1_000_000_000L)
                    : Duration.ofSeconds(Long.parseLong(v));
        }
        try {
            Duration d = Duration.between(
                    java.time.Instant.now(),
                    java.time.ZonedDateTime.parse(v, java.time.format.DateTimeFormatter.RFC_1123_DATE_TIME)
                            .toInstant());
            return d.isNegative() ? Duration.ZERO : d;
        } catch (java.time.format.DateTimeParseException e) {
            return null;
        }
    }

    private static String s(Duration d) {
        return d.toMillis() / 1000.0 + " s";
    }

    /** The {@code error.message} of an OpenAI-style error body, else the body itself. */
    static String serverMessage(HttpException http) {
        String body = http.getMessage() == null ? "" : http.getMessage().strip();
        try {
            tools.jackson.databind.JsonNode message =
                    JSON.readTree(body).path("error").path("message");
            if (message.isString() && !message.stringValue().isBlank()) {
                return message.stringValue();
            }
        } catch (RuntimeException notJson) {
            // not JSON: the body is the message
        }
        return body.isEmpty() ? "(no message)" : body;
    }

    private static String describe(Throwable failure) {
        HttpException http = Causes.first(failure, HttpException.class);
        return http != null ? "HTTP " + http.statusCode() + ": " + serverMessage(http) : String.valueOf(failure);
    }

    private Result once(
            List<ChatMessage> messages,
            List<ToolSpecification> tools,
            TurnControl control,
            Consumer<String> deltas,
            AtomicInteger streamedChars,
            AtomicBoolean output)
            throws Exception {
        CompletableFuture<ChatResponse> done = new CompletableFuture<>();
        AtomicReference<StreamingHandle> handle = new AtomicReference<>();
        ModelCall call = new ModelCall();
        control.whileStreaming(() -> {
            // settle the outcome first: cancelling makes the client report an error we must not mistake for one
            done.completeExceptionally(new TurnControl.Interrupted(control.interruptReason()));
            call.cancel();
            StreamingHandle h = handle.get();
            if (h != null) {
                h.cancel();
            }
        });
        try {
            ChatRequest.Builder request = ChatRequest.builder().messages(messages);
            if (!tools.isEmpty()) {
                request.toolSpecifications(tools);
            }
            send(call, request.build(), handler(done, handle, output, streamedChars, deltas), done);
            ChatResponse response;
            try {
                response = done.get(settings.timeout().toMillis(), TimeUnit.MILLISECONDS);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof TurnControl.Interrupted interrupted) {
                    throw interrupted;
                }
                throw e;
            } catch (TimeoutException e) {
                call.cancel();
                StreamingHandle h = handle.get();
                if (h != null) {
                    h.cancel();
                }
                throw e;
            } catch (java.lang.InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new LeaseLostException();
            }
            return result(response);
        } finally {
            control.streamEnded();
        }
    }

    /**
     * Builds and sends the request on a virtual thread of its own that ends once the request is handed to the HTTP
     * client: what serialising it caches per thread (Jackson 2's buffer recycler, kilobytes of char buffers held
     * through a thread-local) goes with that thread instead of staying on the turn's thread for the whole model call.
     * A failure to send fails {@code done}, as a failed exchange does.
     */
    private void send(
            ModelCall call,
            ChatRequest request,
            StreamingChatResponseHandler handler,
            CompletableFuture<ChatResponse> done) {
        Map<String, String> logContext = MDC.getCopyOfContextMap();
        Thread.ofVirtual().name("model-send").start(() -> {
            if (logContext != null) {
                MDC.setContextMap(logContext); // the turn's session and turn ids on what sending logs
            }
            try {
                call.around(() -> {
                    model.chat(request, handler);
                    return null;
                });
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        });
    }

    static Result result(ChatResponse response) {
        TokenUsage usage = response.tokenUsage();
        Integer in = usage == null ? null : usage.inputTokenCount();
        Integer out = usage == null ? null : usage.outputTokenCount();
        Integer cached = usage instanceof OpenAiTokenUsage openAi && openAi.inputTokensDetails() != null
                ? openAi.inputTokensDetails().cachedTokens()
                : null;
        return new Result(
                response.aiMessage(), in == null ? 0 : in, cached == null ? 0 : cached, out == null ? 0 : out);
    }

    private static StreamingChatResponseHandler handler(
            CompletableFuture<ChatResponse> done,
            AtomicReference<StreamingHandle> handle,
            AtomicBoolean output,
            AtomicInteger streamedChars,
            Consumer<String> deltas) {
        return new StreamingChatResponseHandler() {
            @Override
            public void onPartialResponse(PartialResponse partial, PartialResponseContext context) {
                if (!keep(context.streamingHandle())) {
                    return;
                }
                output.set(true);
                streamedChars.addAndGet(partial.text().length());
                deltas.accept(partial.text());
            }

            @Override
            public void onPartialToolCall(PartialToolCall partial, PartialToolCallContext context) {
                keep(context.streamingHandle());
            }

            @Override
            public void onPartialThinking(
                    dev.langchain4j.model.chat.response.PartialThinking partial,
                    dev.langchain4j.model.chat.response.PartialThinkingContext context) {
                keep(context.streamingHandle()); // a reasoning model's first fragments: cancellable too
            }

            private boolean keep(StreamingHandle h) {
                handle.set(h);
                if (done.isDone()) {
                    h.cancel();
                    return false;
                }
                return true;
            }

            @Override
            public void onCompleteResponse(ChatResponse response) {
                done.complete(response);
            }

            @Override
            public void onError(Throwable error) {
                done.completeExceptionally(error);
            }
        };
    }

    private static void checkStillWanted(TurnControl control) {
        if (!control.leaseAlive()) {
            throw new LeaseLostException();
        }
        if (control.interruptReason() != null) {
            throw new TurnControl.Interrupted(control.interruptReason());
        }
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d);
        } catch (java.lang.InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LeaseLostException();
        }
    }
}
