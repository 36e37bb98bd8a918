package dev.settle.agent;

import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.stereotype.Component;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.function.BooleanSupplier;

/**
 * Calls the model for one turn: the prompt is the system prompt, the committed history and every pending
 * message in order. Failures (connection refused, 5xx, 429, timeout) are retried with exponential backoff a
 * bounded number of times; then {@link ModelFailedException}. Never a tight loop.
 */
@Component
public class ModelCaller {
    private static final Logger log = LoggerFactory.getLogger(ModelCaller.class);

    /** The model's answer and its usage, counted per call. */
    public record Answer(String text, int promptTokens, int completionTokens) {
    }

    public static class ModelFailedException extends RuntimeException {
        ModelFailedException(String message, Throwable cause) {
            super(message, cause);
        }
    }

    /** The lease was lost while waiting: stop without writing. */
    public static class LeaseLostException extends RuntimeException {
        LeaseLostException() {
            super("lease lost");
        }
    }

    private final ChatModel model;
    private final AgentSettings.Llm settings;
    private final String systemPrompt;

    public ModelCaller(ChatModel model, AgentSettings settings) {
        this.model = model;
        this.settings = settings.llm();
        this.systemPrompt = settings.agent().systemPrompt();
    }

    public List<ChatMessage> prompt(Conversation.Snapshot turn) {
        List<ChatMessage> messages = new ArrayList<>();
        messages.add(SystemMessage.from(systemPrompt));
        for (Conversation.Message m : turn.history()) {
            messages.add("user".equals(m.role()) ? UserMessage.from(m.text()) : AiMessage.from(m.text()));
        }
        for (Conversation.Message m : turn.pending()) {
            messages.add(UserMessage.from(m.text()));
        }
        return messages;
    }

    /**
     * @param leaseAlive checked before every attempt and after every failure
     * @param onCall     told the usage of every call that returned
     */
    public Answer call(Conversation.Snapshot turn, BooleanSupplier leaseAlive, java.util.function.BiConsumer<Integer, Integer> onCall) {
        List<ChatMessage> prompt = prompt(turn);
        Duration delay = settings.backoff();
        RuntimeException last = null;
        for (int attempt = 1; attempt <= settings.maxAttempts(); attempt++) {
            if (!leaseAlive.getAsBoolean()) {
                throw new LeaseLostException();
            }
            try {
                ChatResponse response = model.chat(ChatRequest.builder().messages(prompt).build());
                int in = response.tokenUsage() == null || response.tokenUsage().inputTokenCount() == null ? 0 : response.tokenUsage().inputTokenCount();
                int out = response.tokenUsage() == null || response.tokenUsage().outputTokenCount() == null ? 0 : response.tokenUsage().outputTokenCount();
                onCall.accept(in, out);
                String text = response.aiMessage().text();
                return new Answer(text == null ? "" : text, in, out);
            } catch (RuntimeException e) {
                last = e;
                log.warn("model call {}/{} for session {} failed: {}", attempt, settings.maxAttempts(),
                        turn.sessionId(), e.toString());
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
