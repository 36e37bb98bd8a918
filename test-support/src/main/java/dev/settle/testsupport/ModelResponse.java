package dev.settle.testsupport;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What {@link ModelDouble} answers to one request: a text, tool calls, an OpenAI-style error or nothing at all
 * ({@link #hang()}), plus timing and usage modifiers. Immutable; every modifier returns a copy.
 */
public final class ModelResponse {
    enum Kind {
        TEXT,
        TOOL_CALLS,
        ERROR,
        HANG
    }

    private static final AtomicLong CALL_IDS = new AtomicLong();

    final Kind kind;
    String text;
    List<ToolCall> toolCalls = List.of();
    int status = 200;
    String errorMessage;
    String finishReason;
    Duration delay = Duration.ZERO;
    Duration chunkDelay = Duration.ZERO;
    Duration firstEventDelay = Duration.ZERO;
    int chunkSize = 4;
    Integer promptTokens;
    Integer completionTokens;
    Integer cachedTokens;
    String retryAfter;

    private ModelResponse(Kind kind) {
        this.kind = kind;
    }

    /** An assistant message with this content, {@code finish_reason "stop"}. */
    public static ModelResponse text(String text) {
        ModelResponse r = new ModelResponse(Kind.TEXT);
        r.text = text;
        r.finishReason = "stop";
        return r;
    }

    /** An assistant message calling these tools, {@code finish_reason "tool_calls"}. */
    public static ModelResponse toolCalls(List<ToolCall> calls) {
        ModelResponse r = new ModelResponse(Kind.TOOL_CALLS);
        r.toolCalls = List.copyOf(calls);
        r.finishReason = "tool_calls";
        return r;
    }

    /** A single tool call with a generated id ({@code call_double_N}). */
    public static ModelResponse toolCall(String name, String argumentsJson) {
        return toolCalls(List.of(new ToolCall("call_double_" + CALL_IDS.incrementAndGet(), name, argumentsJson)));
    }

    /** An HTTP error with an OpenAI-style {@code {"error": {...}}} body and a default message. */
    public static ModelResponse error(int httpStatus) {
        return error(httpStatus, "model double error " + httpStatus);
    }

    public static ModelResponse error(int httpStatus, String message) {
        ModelResponse r = new ModelResponse(Kind.ERROR);
        r.status = httpStatus;
        r.errorMessage = message;
        return r;
    }

    /**
     * Sends nothing, not even headers, until {@link ModelDouble#releaseHangs()} or {@link ModelDouble#close()};
     * then answers 503 (which also reveals whether the client had already gone, see {@link ModelDouble}).
     */
    public static ModelResponse hang() {
        return new ModelResponse(Kind.HANG);
    }

    /** Waits this long before the first byte (headers included). */
    public ModelResponse delay(Duration delay) {
        ModelResponse r = copy();
        r.delay = delay;
        return r;
    }

    /**
     * For a stream: sends the response headers at once, then waits this long before the first event (a server that
     * accepted the request and is still thinking).
     */
    public ModelResponse firstEventDelay(Duration firstEventDelay) {
        ModelResponse r = copy();
        r.firstEventDelay = firstEventDelay;
        return r;
    }

    /** Waits this long between two streamed events. */
    public ModelResponse chunkDelay(Duration chunkDelay) {
        ModelResponse r = copy();
        r.chunkDelay = chunkDelay;
        return r;
    }

    /** Characters (code points) per streamed content or arguments delta; default 4. */
    public ModelResponse chunkSize(int chars) {
        if (chars < 1) {
            throw new IllegalArgumentException("chunkSize must be positive: " + chars);
        }
        ModelResponse r = copy();
        r.chunkSize = chars;
        return r;
    }

    /** Reported token usage; default is a rough count (characters / 4). */
    public ModelResponse usage(int promptTokens, int completionTokens) {
        ModelResponse r = copy();
        r.promptTokens = promptTokens;
        r.completionTokens = completionTokens;
        return r;
    }

    /**
     * Reported token usage with cached prompt tokens ({@code usage.prompt_tokens_details.cached_tokens}, part of
     * {@code promptTokens}).
     */
    public ModelResponse usage(int promptTokens, int cachedTokens, int completionTokens) {
        ModelResponse r = usage(promptTokens, completionTokens);
        r.cachedTokens = cachedTokens;
        return r;
    }

    /** Reported cached prompt tokens, leaving the other figures as they are. */
    ModelResponse cachedTokens(int cachedTokens) {
        ModelResponse r = copy();
        r.cachedTokens = cachedTokens;
        return r;
    }

    /** Overrides the {@code finish_reason} (e.g. {@code "length"}). */
    public ModelResponse finishReason(String finishReason) {
        ModelResponse r = copy();
        r.finishReason = finishReason;
        return r;
    }

    /** Adds a {@code Retry-After} header (meant for 429 errors). */
    public ModelResponse retryAfter(String value) {
        ModelResponse r = copy();
        r.retryAfter = value;
        return r;
    }

    private ModelResponse copy() {
        ModelResponse r = new ModelResponse(kind);
        r.text = text;
        r.toolCalls = toolCalls;
        r.status = status;
        r.errorMessage = errorMessage;
        r.finishReason = finishReason;
        r.delay = delay;
        r.chunkDelay = chunkDelay;
        r.firstEventDelay = firstEventDelay;
        r.chunkSize = chunkSize;
        r.promptTokens = promptTokens;
        r.completionTokens = completionTokens;
        r.cachedTokens = cachedTokens;
        r.retryAfter = retryAfter;
        return r;
    }

    @Override
    public String toString() {
        return "ModelResponse[" + kind
                + (kind == Kind.TEXT
                        ? " " + text
                        : kind == Kind.TOOL_CALLS ? " " + toolCalls : kind == Kind.ERROR ? " " + status : "")
                + "]";
    }
}
