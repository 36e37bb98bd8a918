package dev.settle.testsupport;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.exception.InternalServerException;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.request.json.JsonObjectSchema;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.PartialResponse;
import dev.langchain4j.model.chat.response.PartialResponseContext;
import dev.langchain4j.model.chat.response.PartialToolCall;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.openai.OpenAiChatModel;
import dev.langchain4j.model.openai.OpenAiStreamingChatModel;
import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.model.output.TokenUsage;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Drives {@link ModelDouble} with the real langchain4j OpenAI clients. */
class ModelDoubleTest {
    private static final ToolSpecification WEATHER = ToolSpecification.builder()
            .name("get_weather")
            .description("Current weather in a city")
            .parameters(JsonObjectSchema.builder()
                    .addStringProperty("city")
                    .addStringProperty("unit")
                    .required("city")
                    .build())
            .build();
    private static final String ARGS = "{\"city\":\"Paris\",\"unit\":\"celsius\"}";

    private static ModelDouble model;

    @BeforeAll
    static void start() {
        model = ModelDouble.start();
    }

    @AfterAll
    static void stop() {
        model.close();
    }

    @BeforeEach
    void reset() {
        model.reset();
    }

    private static OpenAiChatModel chatModel(Duration timeout) {
        return OpenAiChatModel.builder()
                .baseUrl(model.baseUrl())
                .apiKey("test-key")
                .modelName("gpt-double")
                .maxRetries(0)
                .timeout(timeout)
                .build();
    }

    private static OpenAiStreamingChatModel streamingModel() {
        return OpenAiStreamingChatModel.builder()
                .baseUrl(model.baseUrl())
                .apiKey("test-key")
                .modelName("gpt-double")
                .timeout(Duration.ofSeconds(10))
                .build();
    }

    private static List<Integer> tokens(TokenUsage usage) {
        return List.of(usage.inputTokenCount(), usage.outputTokenCount(), usage.totalTokenCount());
    }

    @Test
    void echoesTheUserTextByDefault() {
        assertThat(model.baseUrl()).matches("http://127\\.0\\.0\\.1:\\d+/v1");

        String reply = chatModel(Duration.ofSeconds(10)).chat("hello double");

        assertThat(reply).isEqualTo("echo: hello double");
        assertThat(model.requestCount()).isEqualTo(1);
        ModelRequest request = model.requests().getFirst();
        assertThat(request.sequence()).isEqualTo(1);
        assertThat(request.model()).isEqualTo("gpt-double");
        assertThat(request.stream()).isFalse();
        assertThat(request.lastUserText()).isEqualTo("hello double");
        assertThat(request.messages()).containsExactly(new ModelRequest.Msg("user", "hello double", List.of(), null));
    }

    @Test
    void answersScriptedTextWithUsage() {
        model.respondWith(r -> ModelResponse.text("Bonjour").usage(12, 3));

        ChatResponse response = chatModel(Duration.ofSeconds(10))
                .chat(ChatRequest.builder().messages(UserMessage.from("hi")).build());

        assertThat(response.aiMessage().text()).isEqualTo("Bonjour");
        assertThat(response.finishReason()).isEqualTo(FinishReason.STOP);
        assertThat(tokens(response.tokenUsage())).containsExactly(12, 3, 15);
    }

    @Test
    void answersToolCallsAndParsesTheFollowUpConversation() {
        model.respondWith(r -> r.sequence() == 1
                ? ModelResponse.toolCalls(List.of(new ToolCall("call_7", "get_weather", ARGS)))
                : ModelDouble.echo(r));
        OpenAiChatModel chat = chatModel(Duration.ofSeconds(10));
        UserMessage question = UserMessage.from("weather in Paris?");

        ChatResponse first = chat.chat(ChatRequest.builder()
                .messages(question)
                .toolSpecifications(WEATHER)
                .build());

        AiMessage ai = first.aiMessage();
        assertThat(ai.toolExecutionRequests())
                .containsExactly(ToolExecutionRequest.builder()
                        .id("call_7")
                        .name("get_weather")
                        .arguments(ARGS)
                        .build());
        assertThat(first.finishReason()).isEqualTo(FinishReason.TOOL_EXECUTION);
        assertThat(model.requests().getFirst().toolNames()).containsExactly("get_weather");

        ChatResponse second = chat.chat(ChatRequest.builder()
                .messages(
                        question,
                        ai,
                        ToolExecutionResultMessage.from("call_7", "get_weather", "18 degrees"),
                        UserMessage.from("thanks"))
                .toolSpecifications(WEATHER)
                .build());

        assertThat(second.aiMessage().text()).isEqualTo("echo: thanks");
        assertThat(model.requests().get(1).messages())
                .containsExactly(
                        new ModelRequest.Msg("user", "weather in Paris?", List.of(), null),
                        new ModelRequest.Msg(
                                "assistant", null, List.of(new ToolCall("call_7", "get_weather", ARGS)), null),
                        new ModelRequest.Msg("tool", "18 degrees", List.of(), "call_7"),
                        new ModelRequest.Msg("user", "thanks", List.of(), null));
    }

    @Test
    void surfacesAnErrorStatusAsAnException() {
        model.respondWith(r -> ModelResponse.error(500, "boom"));

        assertThatThrownBy(() -> chatModel(Duration.ofSeconds(10)).chat("hi"))
                .isInstanceOf(InternalServerException.class)
                .hasMessageContaining("boom");
        assertThat(model.requestCount()).isEqualTo(1);
    }

    @Test
    void streamsTheScriptedTextInChunks() throws Exception {
        String text = "The quick brown fox jumps over the lazy dog.";
        model.respondWith(r -> ModelResponse.text(text).chunkSize(5).usage(7, 11));
        List<String> partials = new CopyOnWriteArrayList<>();
        CompletableFuture<ChatResponse> done = new CompletableFuture<>();

        streamingModel().chat("go", new StreamingChatResponseHandler() {
            @Override
            public void onPartialResponse(String partial) {
                partials.add(partial);
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
        ChatResponse response = done.get(10, TimeUnit.SECONDS);

        assertThat(String.join("", partials)).isEqualTo(text);
        assertThat(partials).hasSize(9).startsWith("The q", "uick ");
        assertThat(response.aiMessage().text()).isEqualTo(text);
        assertThat(response.finishReason()).isEqualTo(FinishReason.STOP);
        assertThat(tokens(response.tokenUsage())).containsExactly(7, 11, 18);
        assertThat(model.requests().getFirst().stream()).isTrue();
        assertThat(model.requests().getFirst().includeUsage()).isTrue();
    }

    @Test
    void streamsToolCallArgumentsInPiecesThatReassemble() throws Exception {
        model.respondWith(r -> ModelResponse.toolCalls(List.of(new ToolCall("call_9", "get_weather", ARGS))));
        List<PartialToolCall> partials = new CopyOnWriteArrayList<>();
        CompletableFuture<ChatResponse> done = new CompletableFuture<>();

        streamingModel()
                .chat(
                        ChatRequest.builder()
                                .messages(UserMessage.from("weather?"))
                                .toolSpecifications(WEATHER)
                                .build(),
                        new StreamingChatResponseHandler() {
                            @Override
                            public void onPartialToolCall(PartialToolCall partial) {
                                partials.add(partial);
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
        ChatResponse response = done.get(10, TimeUnit.SECONDS);

        assertThat(response.aiMessage().toolExecutionRequests())
                .containsExactly(ToolExecutionRequest.builder()
                        .id("call_9")
                        .name("get_weather")
                        .arguments(ARGS)
                        .build());
        assertThat(response.finishReason()).isEqualTo(FinishReason.TOOL_EXECUTION);
        assertThat(partials.size()).isGreaterThanOrEqualTo(2);
        assertThat(partials.stream().map(PartialToolCall::partialArguments).reduce("", String::concat))
                .isEqualTo(ARGS);
    }

    @Test
    void countsAStreamTheClientCancels() throws Exception {
        model.respondWith(r -> ModelResponse.text("x".repeat(200)).chunkSize(1).chunkDelay(Duration.ofMillis(20)));
        CompletableFuture<String> firstPartial = new CompletableFuture<>();

        streamingModel().chat("go", new StreamingChatResponseHandler() {
            @Override
            public void onPartialResponse(PartialResponse partial, PartialResponseContext context) {
                context.streamingHandle().cancel();
                firstPartial.complete(partial.text());
            }

            @Override
            public void onCompleteResponse(ChatResponse response) {}

            @Override
            public void onError(Throwable error) {}
        });

        assertThat(firstPartial.get(10, TimeUnit.SECONDS)).isEqualTo("x");
        model.awaitCancelled(1, Duration.ofSeconds(5));
        assertThat(model.cancelledCount()).isEqualTo(1);
    }

    @Test
    void aHangingRequestDoesNotBlockOthersAndIsCountedOnceWhenItsClientLeaves() throws Exception {
        model.respondWith(r -> r.sequence() == 1 ? ModelResponse.hang() : ModelResponse.text("fast"));
        CompletableFuture<Throwable> hung = CompletableFuture.supplyAsync(() -> {
            try {
                chatModel(Duration.ofMillis(500)).chat("slow");
                return null;
            } catch (RuntimeException e) {
                return e;
            }
        });
        model.awaitRequests(1, Duration.ofSeconds(5));

        assertThat(chatModel(Duration.ofSeconds(10)).chat("quick")).isEqualTo("fast");
        assertThat(hung.get(10, TimeUnit.SECONDS)).isNotNull();
        // the timed-out client closes its connection: the hang is counted then, while it still hangs
        model.awaitCancelled(1, Duration.ofSeconds(5));
        assertThat(model.disconnects()).singleElement().satisfies(d -> {
            assertThat(d.sequence()).isEqualTo(1);
            assertThat(d.bytesSent()).isZero();
        });

        model.releaseHangs();
        assertThat(chatModel(Duration.ofSeconds(10)).chat("after")).isEqualTo("fast"); // the release has run

        assertThat(model.cancelledCount()).isEqualTo(1);
        assertThat(model.disconnects()).hasSize(1);
    }

    @Test
    void answersRateLimitsWithRetryAfterAndAnOpenAiErrorBody() throws Exception {
        model.respondWith(r -> ModelResponse.error(429).retryAfter("7"));
        HttpResponse<String> response = HttpClient.newHttpClient()
                .send(
                        HttpRequest.newBuilder()
                                .uri(URI.create(model.baseUrl() + "/chat/completions"))
                                .POST(HttpRequest.BodyPublishers.ofString("{\"model\":\"m\",\"messages\":[]}"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(429);
        assertThat(response.headers().firstValue("Retry-After")).contains("7");
        JsonNode error = JsonMapper.shared().readTree(response.body()).path("error");
        assertThat(error.path("type").asString()).isEqualTo("rate_limit_exceeded");
        assertThat(error.path("message").asString()).isEqualTo("model double error 429");
    }

    /**
     * Calls held open by an unwatched double cost this process two sockets each (the client's and the server's), not
     * four (with the front's two), and are answered after their delay as usual.
     */
    @Test
    void an_unwatched_double_holds_a_call_on_one_socket_and_answers_it_after_its_delay() throws Exception {
        int calls = 40;
        try (ModelDouble unwatched = ModelDouble.startUnwatched()) {
            unwatched.respondWith(r -> ModelResponse.text("later").delay(Duration.ofSeconds(2)));
            HttpClient http =
                    HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
            long before = openFiles();
            List<CompletableFuture<HttpResponse<String>>> held = new java.util.ArrayList<>();
            for (int i = 0; i < calls; i++) {
                held.add(http.sendAsync(
                        HttpRequest.newBuilder(URI.create(unwatched.baseUrl() + "/chat/completions"))
                                .header("Content-Type", "application/json")
                                .POST(HttpRequest.BodyPublishers.ofString(
                                        "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}"))
                                .build(),
                        HttpResponse.BodyHandlers.ofString()));
            }
            unwatched.awaitRequests(calls, Duration.ofSeconds(10));
            assertThat(openFiles() - before).isLessThan(3L * calls);
            for (CompletableFuture<HttpResponse<String>> call : held) {
                assertThat(call.get(10, TimeUnit.SECONDS).body()).contains("later");
            }
        }
    }

    private static long openFiles() throws java.io.IOException {
        try (java.util.stream.Stream<java.nio.file.Path> fds =
                java.nio.file.Files.list(java.nio.file.Path.of("/proc/self/fd"))) {
            return fds.count();
        }
    }

    /** A raw HTTP client that sends a request and leaves once the double has it, before any answer. */
    private static void sendAndLeave(String body) throws Exception {
        int before =
                model.requestCount(); // counted before sending: the request may be counted before sendAsync returns
        HttpClient http = HttpClient.newHttpClient();
        CompletableFuture<HttpResponse<String>> exchange = http.sendAsync(
                HttpRequest.newBuilder(URI.create(model.baseUrl() + "/chat/completions"))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        model.awaitRequests(before + 1, Duration.ofSeconds(5));
        exchange.cancel(true);
    }

    @Test
    void a_client_that_leaves_a_silent_model_is_noticed_before_a_byte_was_sent() throws Exception {
        model.respondWith(r -> ModelResponse.text("late").delay(Duration.ofSeconds(8)));
        sendAndLeave("{\"model\":\"m\",\"stream\":true,\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
        model.awaitCancelled(1, Duration.ofSeconds(2));
        ModelDouble.Disconnect cut = model.disconnect(1).orElseThrow();
        assertThat(cut.bytesSent()).isZero();
        assertThat(cut.eventsSent()).isZero();
    }

    @Test
    void a_client_that_leaves_a_hanging_request_is_counted_without_a_release() throws Exception {
        model.respondWith(r -> ModelResponse.hang());
        sendAndLeave("{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"hi\"}]}");
        model.awaitCancelled(1, Duration.ofSeconds(2));
        assertThat(model.disconnect(1).orElseThrow().bytesSent()).isZero();
    }

    @Test
    void the_prefix_cache_reports_the_longest_common_prefix_with_any_earlier_request() {
        model.simulatePrefixCache(true);
        OpenAiChatModel chat = chatModel(Duration.ofSeconds(5));
        String shared = "x".repeat(400);
        TokenUsage first = chat.chat(ChatRequest.builder()
                        .messages(UserMessage.from(shared), UserMessage.from("a"))
                        .build())
                .tokenUsage();
        TokenUsage second = chat.chat(ChatRequest.builder()
                        .messages(UserMessage.from(shared), UserMessage.from("b"))
                        .build())
                .tokenUsage();
        assertThat(((dev.langchain4j.model.openai.OpenAiTokenUsage) first)
                        .inputTokensDetails()
                        .cachedTokens())
                .isZero();
        String a = model.requests().get(0).json().path("messages").toString();
        String b = model.requests().get(1).json().path("messages").toString();
        int common = 0;
        while (a.charAt(common) == b.charAt(common)) {
            common++;
        }
        assertThat(common).isGreaterThan(400);
        assertThat(((dev.langchain4j.model.openai.OpenAiTokenUsage) second)
                        .inputTokensDetails()
                        .cachedTokens())
                .isEqualTo(Math.min(second.inputTokenCount(), common / 4));
    }
}
