package dev.settle.agent;

import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

import java.time.Duration;
import java.util.List;
import java.util.function.BiConsumer;
import java.util.function.BooleanSupplier;

/**
 * One model call of a turn. Failures (connection refused, 5xx, 429, timeout) are retried with exponential
 * backoff a bounded number of times; then {@link ModelFailedException}. Never a tight loop, and never past a
 * lost lease.
 */
@Component
public class ModelCaller {
    private static final Logger log = LoggerFactory.getLogger(ModelCaller.class);

    public static class ModelFailedException extends RuntimeException {
        ModelFailedException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** The lease was lost: stop without writing. */
    public static class LeaseLostException extends RuntimeException {
        public LeaseLostException() {
            super("lease lost");
        }
    }

    private final ChatModel model;
    private final AgentSettings.Llm settings;

    public ModelCaller(ChatModel model, AgentSettings settings) {
        this.model = model;
        this.settings = settings.llm();
    }

    /**
     * @param leaseAlive checked before every attempt
     * @param usage      told the token usage of every call that returned
     */
    public AiMessage call(long sessionId, List<ChatMessage> messages, List<ToolSpecification> tools,
                          BooleanSupplier leaseAlive, BiConsumer<Integer, Integer> usage) {
        Duration delay = settings.backoff();
        RuntimeException last = null;
        for (int attempt = 1; attempt <= settings.maxAttempts(); attempt++) {
            if (!leaseAlive.getAsBoolean()) {
                throw new LeaseLostException();
            }
            try {
                ChatRequest.Builder request = ChatRequest.builder().messages(messages);
                if (!tools.isEmpty()) {
                    request.toolSpecifications(tools);
                }
                ChatResponse response = model.chat(request.build());
                Integer in = response.tokenUsage() == null ? null : response.tokenUsage().inputTokenCount();
                Integer out = response.tokenUsage() == null ? null : response.tokenUsage().outputTokenCount();
                usage.accept(in == null ? 0 : in, out == null ? 0 : out);
                return response.aiMessage();
            } catch (RuntimeException e) {
                last = e;
                log.warn("model call {}/{} for session {} failed: {}", attempt, settings.maxAttempts(), sessionId, e.toString());
            }
            if (attempt < settings.maxAttempts()) {
                sleep(delay);
                delay = delay.multipliedBy(2);
            }
        }
        throw new ModelFailedException("model failed " + settings.maxAttempts() + " times: " + last, last);
    }

    private static void sleep(Duration d) {
        try {
            Thread.sleep(d);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new LeaseLostException();
        }
    }
}
