package dev.settle.agent;

import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.PartialResponse;
import dev.langchain4j.model.chat.response.PartialResponseContext;
import dev.langchain4j.model.chat.response.PartialToolCall;
import dev.langchain4j.model.chat.response.PartialToolCallContext;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.chat.response.StreamingHandle;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Consumer;

/**
 * One streamed model call of a turn: every text delta goes to the turn's {@link TurnStream} as it arrives.
 * A failure before the first delta (connection refused, 5xx, 429, timeout) is retried with exponential
 * backoff a bounded number of times, then {@link ModelFailedException}; a failure after output was streamed
 * is not retried (that would stream the text twice). An interrupt cancels the HTTP stream at once.
 */
@Component
public class ModelStream {
    private static final Logger log = LoggerFactory.getLogger(ModelStream.class);

    /** The model's message and its token usage; {@code streamedChars} counts the text deltas delivered. */
    public record Result(AiMessage message, int promptTokens, int completionTokens) {
    }

    public static class ModelFailedException extends RuntimeException {
        ModelFailedException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    private final StreamingChatModel model;
    private final AgentSettings.Llm settings;

    public ModelStream(StreamingChatModel model, AgentSettings settings) {
        this.model = model;
        this.settings = settings.llm();
    }

    /** @param deltas receives every text delta, in order */
    public Result call(long sessionId, List<ChatMessage> messages, List<ToolSpecification> tools, TurnControl control,
                       Consumer<String> deltas, AtomicInteger streamedChars) {
        Duration delay = settings.backoff();
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
                log.warn("model call {}/{} for session {} failed: {}", attempt, settings.maxAttempts(), sessionId, last.toString());
                if (output.get()) {
                    throw new ModelFailedException("model stream broke after output was streamed: " + last, last);
                }
            }
            if (attempt < settings.maxAttempts()) {
                sleep(delay);
                delay = delay.multipliedBy(2);
            }
        }
        throw new ModelFailedException("model failed " + settings.maxAttempts() + " times: " + last, last);
    }

    private Result once(List<ChatMessage> messages, List<ToolSpecification> tools, TurnControl control,
                        Consumer<String> deltas, AtomicInteger streamedChars, AtomicBoolean output) throws Exception {
        CompletableFuture<ChatResponse> done = new CompletableFuture<>();
        AtomicReference<StreamingHandle> handle = new AtomicReference<>();
        control.whileStreaming(() -> {
            // settle the outcome first: cancelling makes the client report an error we must not mistake for one
            done.completeExceptionally(new TurnControl.Interrupted(control.interruptReason()));
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
            model.chat(request.build(), new StreamingChatResponseHandler() {
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
                public void onPartialThinking(dev.langchain4j.model.chat.response.PartialThinking partial,
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
            });
            ChatResponse response;
            try {
                response = done.get(settings.timeout().toMillis(), TimeUnit.MILLISECONDS);
            } catch (ExecutionException e) {
                if (e.getCause() instanceof TurnControl.Interrupted interrupted) {
                    throw interrupted;
                }
                throw e;
            } catch (TimeoutException e) {
                StreamingHandle h = handle.get();
                if (h != null) {
                    h.cancel();
                }
                throw e;
            } catch (java.lang.InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new LeaseLostException();
            }
            Integer in = response.tokenUsage() == null ? null : response.tokenUsage().inputTokenCount();
            Integer out = response.tokenUsage() == null ? null : response.tokenUsage().outputTokenCount();
            return new Result(response.aiMessage(), in == null ? 0 : in, out == null ? 0 : out);
        } finally {
            control.streamEnded();
        }
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
