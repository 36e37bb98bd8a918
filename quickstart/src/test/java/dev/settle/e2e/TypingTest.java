package dev.settle.e2e;

import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static dev.settle.e2e.SettleSystem.sleep;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Typing signals through the whole stack: a client that says its user is typing during each pause gets one model
 * call and one reply for the burst, however long the pauses are compared with the window (window 400 ms, typing
 * hold 1 s, max-wait 10 s).
 */
class TypingTest {
    static final Duration LONG = Duration.ofSeconds(30);
    static final Duration HOLD = Duration.ofSeconds(1);
    /** Longer than the window: without typing signals, every pause would start a turn. */
    static final Duration PAUSE = Duration.ofMillis(1300);
    /** How often the client repeats its signal while its user types (well within the hold). */
    static final Duration EVERY = Duration.ofMillis(400);

    static SettleSystem settle;

    @BeforeAll
    static void start() {
        settle = new SettleSystem(
                "typing",
                true,
                Map.of("settle.debounce.typinghold", HOLD.toMillis() + "ms", "settle.debounce.maxwait", "10s"));
    }

    @AfterAll
    static void stop() {
        settle.close();
    }

    @BeforeEach
    void reset() {
        settle.model.reset();
        settle.receiver.reset();
    }

    /** The client's side of a pause: a signal at its start and every {@link #EVERY} until the next message. */
    static void typeFor(String session, Duration pause) {
        long end = System.nanoTime() + pause.toNanos();
        while (true) {
            settle.typing(session);
            long left = end - System.nanoTime();
            if (left <= 0) {
                return;
            }
            sleep(Duration.ofNanos(Math.min(left, EVERY.toNanos())));
            if (System.nanoTime() >= end) {
                return;
            }
        }
    }

    @Test
    void a_typed_burst_with_pauses_longer_than_the_window_is_one_model_call_and_one_reply_covering_every_message() {
        String s = SettleSystem.newSessionId();
        String marker = "typed-" + s;
        List<String> texts = List.of(marker + " lunch 35", marker + " and", marker + " coffee", marker + " 12");
        for (int i = 0; i < texts.size(); i++) {
            settle.post(s, texts.get(i));
            if (i == 0) {
                settle.typing(s);
                await("the session view shows the hold")
                        .atMost(Duration.ofSeconds(1))
                        .pollInterval(Duration.ofMillis(10))
                        .pollInSameThread()
                        .until(() -> "typing"
                                .equals(settle.get("/v1/sessions/" + s)
                                        .path("debounce")
                                        .path("cause")
                                        .asString()));
                JsonNode debounce = settle.get("/v1/sessions/" + s).get("debounce");
                assertEquals(true, debounce.get("armed").asBoolean());
                assertEquals(debounce.get("fireAt"), debounce.get("heldUntil"));
            }
            if (i < texts.size() - 1) {
                typeFor(s, PAUSE);
            }
        }

        await("a reply covering version 4")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).stream()
                        .anyMatch(
                                d -> d.json().path("data").path("coversVersion").asLong() == 4));
        settle.awaitQuiescent(LONG);

        assertEquals(1, settle.modelCallsMentioning(marker), "exactly one model call");
        List<String> userTexts = settle.model.requests().stream()
                .filter(r -> r.body().contains(marker))
                .findFirst()
                .orElseThrow()
                .messages()
                .stream()
                .filter(m -> "user".equals(m.role()))
                .map(m -> m.content())
                .toList();
        assertEquals(texts, userTexts);
        assertEquals(List.of("COMMITTED"), settle.turnStates(s));
        assertEquals(1, settle.replies(s).size());
        assertEquals(1, settle.replies(s).getFirst()[0]);
        assertEquals(4, settle.replies(s).getFirst()[1]);
        assertEquals(1, settle.webhooks(s).size());
        assertEquals(
                4,
                settle.webhooks(s)
                        .getFirst()
                        .json()
                        .get("data")
                        .get("coversVersion")
                        .asLong());
    }

    @Test
    void typing_does_not_interrupt_a_running_turn_and_is_not_in_the_event_log() {
        String s = SettleSystem.newSessionId();
        String marker = "running-" + s;
        settle.model.respondWith(r -> r.body().contains(marker)
                ? ModelResponse.text("the answer").delay(Duration.ofMillis(1500))
                : ModelDouble.echo(r));
        settle.post(s, marker + " one");
        await("the turn started")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.modelCallsMentioning(marker) == 1);

        typeFor(s, Duration.ofMillis(1000));

        await("one webhook")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        settle.awaitQuiescent(LONG);
        assertEquals(1, settle.modelCallsMentioning(marker));
        assertEquals(List.of("COMMITTED"), settle.turnStates(s));
        assertEquals(
                "the answer",
                settle.webhooks(s).getFirst().json().get("data").get("text").asString());
        assertEquals(
                List.of("message.accepted", "turn.started", "reply.created"),
                settle.jdbc.queryForList("""
                        SELECT e.type FROM session_event e JOIN chat_session s ON s.id = e.session_id
                         WHERE s.external_id = ? AND e.type <> 'reply.delta' ORDER BY e.seq""", String.class, s),
                "the session's event log, without the streamed chunks");

        settle.typing(s); // answered: a signal arms nothing
        settle.awaitQuiescent(LONG);
        assertEquals(
                0,
                settle.jdbc.queryForObject(
                        "SELECT COUNT(*) FROM debounce_timer WHERE session_id = ?",
                        Integer.class,
                        settle.sessionPk(s)));
    }
}
