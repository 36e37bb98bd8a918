package dev.settle.agent.model;

import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.settle.agent.AgentSettings;
import dev.settle.agent.lease.TurnControl;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.MutablePropertySources;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The request of a model call is built and sent on a thread that ends once it is sent, never on the turn's thread,
 * which waits for the model for the whole call: what serialising the request caches per thread must not stay with
 * every turn in flight. A failure to send is a failed attempt like any other.
 */
class ModelSendTest {
    private static final AgentSettings SETTINGS = settings(Map.of("settle.llm.backoff", "1ms"));

    static AgentSettings settings(Map<String, Object> properties) {
        MutablePropertySources sources = new MutablePropertySources();
        sources.addFirst(new MapPropertySource("test", properties));
        return new Binder(ConfigurationPropertySources.from(sources)).bindOrCreate("settle", AgentSettings.class);
    }

    private static List<ChatMessage> prompt() {
        return new ArrayList<>(List.of(UserMessage.from("hi")));
    }

    @Test
    void the_request_is_sent_from_a_thread_that_ends_once_it_is_sent() {
        AtomicReference<Thread> sender = new AtomicReference<>();
        StreamingChatModel model = new StreamingChatModel() {
            @Override
            public void doChat(ChatRequest request, StreamingChatResponseHandler handler) {
                sender.set(Thread.currentThread());
                Thread.ofVirtual()
                        .start(() -> handler.onCompleteResponse(ChatResponse.builder()
                                .aiMessage(AiMessage.from("hello"))
                                .build()));
            }
        };
        ModelStream.Result result = new ModelStream(model, SETTINGS)
                .call(1, prompt(), List.of(), new TurnControl(null), d -> {}, new AtomicInteger());
        assertEquals("hello", result.message().text());
        assertNotSame(Thread.currentThread(), sender.get(), "the turn's thread never sends the request");
        await("the sending thread ends")
                .atMost(Duration.ofSeconds(5))
                .until(() -> !sender.get().isAlive());
    }

    @Test
    void a_request_that_cannot_be_sent_is_a_failed_attempt() {
        AtomicInteger attempts = new AtomicInteger();
        StreamingChatModel model = new StreamingChatModel() {
            @Override
            public void doChat(ChatRequest request, StreamingChatResponseHandler handler) {
                attempts.incrementAndGet();
                throw new IllegalStateException("no request today");
            }
        };
        ModelStream.ModelFailedException failed = assertThrows(
                ModelStream.ModelFailedException.class,
                () -> new ModelStream(model, SETTINGS)
                        .call(1, prompt(), List.of(), new TurnControl(null), d -> {}, new AtomicInteger()));
        assertTrue(failed.getMessage().contains("no request today"), failed.getMessage());
        assertEquals(1, attempts.get(), "not a transport error: not retried");
    }
}
