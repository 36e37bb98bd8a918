package dev.settle.e2e;

import dev.settle.testsupport.ModelResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import tools.jackson.databind.JsonNode;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static dev.settle.e2e.SettleSystem.sleep;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The adaptive window through the whole stack: a user whose pauses (1.5 × the window) make the fixed window fire
 * mid-burst costs one model call per burst once the window learned them, and so does a new session of the same
 * tenant. The model takes longer than the pause, so a turn started mid-burst is still running when the next
 * message arrives, and is discarded: one wasted call.
 */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class LearnedWindowTest {
    static final Duration WINDOW = SettleSystem.WINDOW;
    static final Duration PAUSE = WINDOW.multipliedBy(3).dividedBy(2);
    static final Duration MODEL = Duration.ofMillis(600);
    static final Duration LONG = Duration.ofSeconds(30);

    SettleSystem settle;

    @BeforeAll
    void start() {
        settle = new SettleSystem(
                "learned",
                true,
                Map.of(
                        "settle.debounce.adaptive",
                        "true",
                        "settle.debounce.maxwindow",
                        WINDOW.multipliedBy(4).toMillis() + "ms"));
        settle.model.respondWith(r -> ModelResponse.text("noted").delay(MODEL));
    }

    @AfterAll
    void stop() {
        if (settle != null) {
            settle.close();
        }
    }

    /**
     * Posts a burst of {@code messages}, {@link #PAUSE} apart, and waits until it is answered and nothing more can
     * happen; returns the model calls it took. With {@code interruptFirst}, the second message is posted only
     * once the first message's turn has called the model (the window fired mid-burst), and no earlier than a
     * pause after the first.
     */
    int burst(String session, int messages, boolean interruptFirst) {
        int before = settle.model.requestCount();
        long version = 0;
        for (int i = 0; i < messages; i++) {
            long posted = System.nanoTime();
            version =
                    settle.post(session, session + " part " + i).get("version").asLong();
            if (i == messages - 1) {
                break;
            }
            if (i == 0 && interruptFirst) {
                await("the window fired mid-burst and the turn called the model")
                        .atMost(LONG)
                        .pollInterval(Duration.ofMillis(5))
                        .pollInSameThread()
                        .until(() -> settle.model.requestCount() > before);
            }
            Duration left = PAUSE.minusNanos(System.nanoTime() - posted);
            if (!left.isNegative()) {
                sleep(left);
            }
        }
        long answered = version;
        await("the burst is answered")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.replies(session).stream().anyMatch(r -> r[1] == answered));
        settle.awaitQuiescent(LONG);
        return settle.model.requestCount() - before;
    }

    @Test
    void
            a_session_interrupted_by_pauses_of_1_5_windows_gets_one_model_call_per_burst_once_learned_and_so_does_a_new_session_of_its_tenant() {
        // a first answer warms the pipeline up (a single message teaches nothing)
        burst(SettleSystem.newSessionId(), 1, false);

        String typist = SettleSystem.newSessionId();
        int first = burst(typist, 3, true);
        assertTrue(first >= 2, "the first burst was interrupted mid-way: " + first + " model calls");
        assertTrue(
                settle.turnStates(typist).contains("DISCARDED"),
                settle.turnStates(typist).toString());
        assertEquals(
                List.of(1, 1, 1), List.of(burst(typist, 3, false), burst(typist, 3, false), burst(typist, 3, false)));
        JsonNode view = settle.get("/v1/sessions/" + typist);
        assertEquals("learned", view.get("windowCause").asString(), view.toString());

        String fresh = SettleSystem.newSessionId();
        assertEquals(1, burst(fresh, 3, false), "a new session starts from its tenant's window");
        assertEquals(
                "learned",
                settle.get("/v1/sessions/" + fresh).get("windowCause").asString());
    }
}
