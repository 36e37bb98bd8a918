package dev.settle.agent.model;

import dev.settle.agent.AgentWithModel;
import dev.settle.agent.turn.TurnOutcome;
import dev.settle.agent.turn.TurnRunner;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A newer message closes the model's HTTP request in every phase of the answer: while the model is silent (no
 * byte sent, not even headers), after the headers but before the first token (a model still thinking), and
 * mid-stream. The model double watches the raw connection, so it sees the close even while it sends nothing.
 */
class ModelCutTest {
    private static final Duration SILENCE = Duration.ofSeconds(8);
    /** Generous against a 50 ms interrupt poll; what is asserted is that the close comes long before the model speaks. */
    private static final Duration PROMPTLY = Duration.ofSeconds(1);

    @RegisterExtension
    static final AgentWithModel stack = new AgentWithModel("modelcut");

    static final ModelDouble model = stack.model;

    @Test
    void a_silent_model_is_disconnected_before_it_sent_a_byte() {
        ModelDouble.Disconnect cut =
                cutAfterNewerMessage(ModelResponse.text("too late").delay(SILENCE), false);
        assertEquals(0, cut.bytesSent(), "the client left while the model was silent");
        assertEquals(0, cut.eventsSent());
    }

    @Test
    void a_model_that_sent_headers_but_no_token_is_disconnected() {
        ModelDouble.Disconnect cut =
                cutAfterNewerMessage(ModelResponse.text("too late").firstEventDelay(SILENCE), false);
        assertTrue(cut.bytesSent() > 0, "the headers had reached the client");
        assertEquals(0, cut.eventsSent(), "no token had been sent");
    }

    @Test
    void a_streaming_model_is_disconnected_mid_stream() {
        ModelDouble.Disconnect cut = cutAfterNewerMessage(
                ModelResponse.text("word ".repeat(80)).chunkSize(4).chunkDelay(Duration.ofMillis(100)), true);
        assertTrue(cut.eventsSent() > 0 && cut.eventsSent() < 100, "cut mid-stream: " + cut);
    }

    /**
     * Starts a turn answering with {@code response}, commits a newer message once the model is in the phase under
     * test, and returns the double's record of the closed connection.
     */
    private static ModelDouble.Disconnect cutAfterNewerMessage(ModelResponse response, boolean afterFirstDelta) {
        long session = stack.agent().sessionWithMessages(1);
        model.respondWith(r -> response);
        CompletableFuture<TurnOutcome> turn = CompletableFuture.supplyAsync(
                () -> stack.agent().bean(TurnRunner.class).run(session));
        model.awaitRequests(1, Duration.ofSeconds(10));
        if (afterFirstDelta) {
            await("a streamed delta")
                    .atMost(Duration.ofSeconds(5))
                    .until(() -> stack.agent()
                                    .count(
                                            "SELECT COUNT(*) FROM session_event WHERE session_id = ? AND type = 'reply.delta'",
                                            session)
                            > 0);
        }
        stack.agent().newMessage(session);
        Instant committed = Instant.now();
        ModelDouble.Disconnect cut = await("the model's connection closed")
                .atMost(Duration.ofSeconds(3))
                .until(() -> model.disconnect(1), Optional::isPresent)
                .orElseThrow();
        assertEquals(TurnOutcome.DISCARDED, turn.orTimeout(5, TimeUnit.SECONDS).join());
        org.slf4j.LoggerFactory.getLogger(ModelCutTest.class)
                .info(
                        "model connection closed {} ms after the newer message's commit ({} bytes, {} events sent)",
                        Duration.between(committed, cut.at()).toMillis(),
                        cut.bytesSent(),
                        cut.eventsSent());
        assertEquals(1, model.requestCount(), "an interrupted call is not retried");
        assertEquals(1, model.cancelledCount());
        assertTrue(
                Duration.between(committed, cut.at()).compareTo(PROMPTLY) < 0,
                "closed " + Duration.between(committed, cut.at()).toMillis() + " ms after the newer message");
        return cut;
    }
}
