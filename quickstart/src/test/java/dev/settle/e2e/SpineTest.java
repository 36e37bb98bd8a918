package dev.settle.e2e;

import dev.settle.contracts.MessageAccepted;
import dev.settle.debounce.DebounceTimers;
import dev.settle.ingest.accept.MessageAcceptance;
import dev.settle.ingest.accept.MessageRequest;
import dev.settle.ingest.http.ApiKeyFilter;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import dev.settle.testsupport.WebhookReceiver;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.JsonNode;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.stream.Collectors;

import static dev.settle.e2e.SettleSystem.sleep;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The spine, end to end: POST → debounce → one merged reply → signed webhook. One instance per class, so that a
 * subclass can run the same scenarios on another system ({@link #system()}).
 */
@org.junit.jupiter.api.TestInstance(org.junit.jupiter.api.TestInstance.Lifecycle.PER_CLASS)
class SpineTest {
    static final Duration LONG = Duration.ofSeconds(30);
    static SettleSystem settle;

    @BeforeAll
    void start() {
        settle = system();
    }

    /** The system the scenarios run on: the embedded MariaDB and broker of this test JVM. */
    SettleSystem system() {
        return new SettleSystem("spine");
    }

    @AfterAll
    void stop() {
        if (settle != null) {
            settle.close();
            settle = null;
        }
    }

    @BeforeEach
    void reset() {
        settle.model.reset();
        settle.receiver.reset();
    }

    @Test
    void three_messages_inside_the_window_get_one_model_call_and_one_reply_covering_version_3() {
        String s = SettleSystem.newSessionId();
        String marker = "burst-" + s;
        settle.post(s, marker + " one");
        settle.post(s, marker + " two");
        JsonNode third = settle.post(s, marker + " three");
        assertEquals(3, third.get("version").asLong());

        await("one webhook")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        sleep(SettleSystem.WINDOW.multipliedBy(3));

        assertEquals(1, settle.modelCallsMentioning(marker), "exactly one model call");
        var call = settle.model.requests().stream()
                .filter(r -> r.body().contains(marker))
                .findFirst()
                .orElseThrow();
        List<String> userTexts = call.messages().stream()
                .filter(m -> "user".equals(m.role()))
                .map(m -> m.content())
                .toList();
        assertEquals(List.of(marker + " one", marker + " two", marker + " three"), userTexts);

        assertEquals(1, settle.replies(s).size());
        assertEquals(1, settle.replies(s).getFirst()[0]);
        assertEquals(3, settle.replies(s).getFirst()[1]);
        assertEquals(1, settle.webhooks(s).size());
        JsonNode hook = settle.webhooks(s).getFirst().json();
        assertEquals("reply.created", hook.get("type").asString());
        assertEquals(3, hook.get("data").get("coversVersion").asLong());
        assertEquals(3, hook.get("data").get("messageIds").size());
        JsonNode session = settle.get("/v1/sessions/" + s);
        assertEquals(3, session.get("repliedVersion").asLong());
        assertEquals("idle", session.get("state").asString());
        JsonNode messages = settle.get("/v1/sessions/" + s + "/messages").get("messages");
        assertEquals(4, messages.size());
        assertEquals("assistant", messages.get(3).get("role").asString());
        assertEquals(3, messages.get(3).get("coversVersion").asLong());
        assertEquals(
                hook.get("data").get("text").asString(),
                messages.get(3).get("text").asString());
    }

    @Test
    void a_message_during_generation_discards_that_generation_and_one_reply_covers_both() {
        String s = SettleSystem.newSessionId();
        String marker = "gen-" + s;
        settle.model.respondWith(r -> r.body().contains(marker + " second")
                ? ModelResponse.text("answer to both")
                : r.body().contains(marker)
                        ? ModelResponse.text("stale answer").delay(Duration.ofMillis(1000))
                        : ModelDouble.echo(r));
        settle.post(s, marker + " first");
        await("the first generation started")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.modelCallsMentioning(marker) == 1);
        settle.post(s, marker + " second");

        await("one webhook")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        sleep(Duration.ofMillis(1500));
        assertEquals(1, settle.webhooks(s).size());
        JsonNode hook = settle.webhooks(s).getFirst().json();
        assertEquals("answer to both", hook.get("data").get("text").asString());
        assertEquals(2, hook.get("data").get("coversVersion").asLong());
        assertEquals(List.of("DISCARDED", "COMMITTED"), settle.turnStates(s));
        assertEquals(2, settle.modelCallsMentioning(marker));
        assertEquals(1, settle.replies(s).size());
        assertFalse(settle.get("/v1/sessions/" + s + "/messages").toString().contains("stale answer"));
    }

    @Test
    void a_message_every_300ms_past_maxwait_gets_a_reply_before_typing_stops_and_each_message_is_covered_once() {
        String s = SettleSystem.newSessionId();
        int messages = 20; // 20 x 300 ms = 6 s, well past the 4 s max-wait
        Instant lastPost = null;
        for (int i = 1; i <= messages; i++) {
            settle.post(s, "typing " + i + " " + s);
            lastPost = Instant.now();
            sleep(Duration.ofMillis(300));
        }
        Instant stoppedTyping = lastPost;
        await("every message answered")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() ->
                        settle.replies(s).stream().mapToLong(r -> r[1]).max().orElse(0) == messages);
        List<WebhookReceiver.Delivery> hooks = settle.webhooks(s);
        assertTrue(
                hooks.getFirst().receivedAt().isBefore(stoppedTyping),
                "first reply at " + hooks.getFirst().receivedAt() + ", typing stopped at " + stoppedTyping);
        // the replies partition 1..20: each version covered exactly once
        long next = 1;
        for (long[] reply : settle.replies(s)) {
            assertEquals(next, reply[0], "reply starts right after the previous one");
            next = reply[1] + 1;
        }
        assertEquals(messages + 1, next);
        await("every reply delivered")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == settle.replies(s).size());
    }

    @Test
    void a_session_whose_event_was_lost_is_answered_by_the_sweeper() {
        String s = SettleSystem.newSessionId();
        // committed exactly as the API does, but no MessageAccepted is ever published
        MessageAcceptance acceptance = settle.ingest.getBean(MessageAcceptance.class);
        acceptance.accept(ApiKeyFilter.DEFAULT_TENANT, new MessageRequest(s, "lost event " + s, null, "x"));
        await("the sweeper answered")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        sleep(Duration.ofSeconds(1));
        assertEquals(1, settle.replies(s).size());
        assertEquals(1, settle.webhooks(s).size());
        assertEquals(1, settle.modelCallsMentioning("lost event " + s));
    }

    /**
     * A lost SessionReady ("every message answered"): the timer was armed and fired (its row is gone, as {@code TimerFirer} leaves it), but
     * the SessionReady never reached an agent. Armed and deleted in one transaction of the debounce worker, so the
     * running firer never sees the row and publishes nothing; only the sweeper can wake the session.
     */
    @Test
    void a_session_ready_event_that_never_arrives_is_answered_by_the_sweeper() {
        String s = SettleSystem.newSessionId();
        String text = "lost ready " + s;
        MeterRegistry debounceMeters = settle.debounce.getBean(MeterRegistry.class);
        double sweeperFiresBefore = sweeperFires(debounceMeters);
        // committed exactly as the API does; its MessageAccepted is handled right here instead of by the broker
        MessageAcceptance.Accepted accepted = settle.ingest
                .getBean(MessageAcceptance.class)
                .accept(ApiKeyFilter.DEFAULT_TENANT, new MessageRequest(s, text, null, "x"));
        DebounceTimers timers = settle.debounce.getBean(DebounceTimers.class);
        JdbcClient debounceDb = settle.debounce.getBean(JdbcClient.class);
        new TransactionTemplate(settle.debounce.getBean(PlatformTransactionManager.class)).executeWithoutResult(tx -> {
            assertTrue(
                    timers.arm(new MessageAccepted(
                            accepted.sessionPk(),
                            accepted.version(),
                            accepted.acceptedAt(),
                            accepted.oldestUnansweredAt())),
                    "the timer was armed");
            // the firer's delete, without its publish: a SessionReady lost on the way to the agents
            assertEquals(
                    1,
                    debounceDb
                            .sql("DELETE FROM debounce_timer WHERE session_id = ?")
                            .param(accepted.sessionPk())
                            .update(),
                    "the fired timer's row deleted");
        });

        await("the sweeper answered")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        sleep(Duration.ofSeconds(1));
        assertEquals(1, settle.replies(s).size());
        assertEquals(1, settle.replies(s).getFirst()[0]);
        assertEquals(1, settle.replies(s).getFirst()[1]);
        assertEquals(1, settle.webhooks(s).size());
        assertEquals(
                "reply.created",
                settle.webhooks(s).getFirst().json().get("type").asString());
        assertEquals(
                1,
                settle.webhooks(s)
                        .getFirst()
                        .json()
                        .get("data")
                        .get("coversVersion")
                        .asLong());
        assertEquals(1, settle.modelCallsMentioning(text));
        assertEquals(List.of("COMMITTED"), settle.turnStates(s));
        assertTrue(
                sweeperFires(debounceMeters) > sweeperFiresBefore, "the wake-up came from a timer the sweeper armed");
    }

    /** {@code settle.debounce.fires{cause=sweeper}}, whatever its window tag. */
    static double sweeperFires(MeterRegistry meters) {
        return meters.find("settle.debounce.fires").tag("cause", "sweeper").counters().stream()
                .mapToDouble(io.micrometer.core.instrument.Counter::count)
                .sum();
    }

    @Test
    void webhook_answered_500_twice_then_200_is_acknowledged_once_with_the_same_id_and_a_valid_signature() {
        String s = SettleSystem.newSessionId();
        settle.receiver.answerWith(d -> {
            boolean mine = d.body().contains(s);
            long earlier = settle.allDeliveries(s).size();
            return WebhookReceiver.Answer.status(mine && earlier <= 2 ? 500 : 200);
        });
        settle.post(s, "hook " + s);
        await("acknowledged")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        sleep(Duration.ofMillis(800));
        List<WebhookReceiver.Delivery> all = settle.allDeliveries(s);
        assertEquals(3, all.size());
        assertEquals(
                List.of(500, 500, 200),
                all.stream().map(WebhookReceiver.Delivery::status).toList());
        Set<String> ids = all.stream().map(WebhookReceiver.Delivery::webhookId).collect(Collectors.toSet());
        assertEquals(1, ids.size(), "same webhook-id on every attempt");
        for (WebhookReceiver.Delivery d : all) {
            assertTrue(WebhookReceiver.verify(SettleSystem.SECRET, d), "signature verifies");
            assertFalse(WebhookReceiver.verify("whsec_" + "A".repeat(32), d), "wrong secret fails");
        }
        assertEquals(
                3, settle.jdbc.queryForObject("""
                SELECT COUNT(*) FROM webhook_attempt a JOIN webhook_delivery d ON d.id = a.delivery_id
                 WHERE d.webhook_id = ?""", Integer.class, ids.iterator().next()));
        assertEquals(
                "DELIVERED",
                settle.jdbc.queryForObject(
                        "SELECT status FROM webhook_delivery WHERE webhook_id = ?",
                        String.class,
                        ids.iterator().next()));
    }

    @Test
    void a_model_that_keeps_failing_fails_the_turn_once_sends_reply_failed_and_does_not_loop() {
        String s = SettleSystem.newSessionId();
        String marker = "down-" + s;
        java.util.concurrent.atomic.AtomicBoolean down = new java.util.concurrent.atomic.AtomicBoolean(true);
        settle.model.respondWith(
                r -> r.body().contains(marker) && down.get() ? ModelResponse.error(500) : ModelDouble.echo(r));
        settle.post(s, marker);
        await("reply.failed webhook")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        JsonNode failed = settle.webhooks(s).getFirst().json();
        assertEquals("reply.failed", failed.get("type").asString());
        assertTrue(failed.get("data").get("error").asString().contains("model failed"));
        // several sweeper intervals later: still exactly max-attempts calls, no retry loop
        sleep(Duration.ofSeconds(3));
        assertEquals(2, settle.modelCallsMentioning(marker));
        assertEquals(List.of("FAILED"), settle.turnStates(s));
        assertEquals(0, settle.replies(s).size());
        assertEquals(
                1,
                settle.jdbc.queryForObject(
                        "SELECT failed_version FROM chat_session WHERE external_id = ?", Long.class, s));
        assertEquals(0, settle.get("/v1/sessions/" + s).get("repliedVersion").asLong());

        // an explicit retry while the model is still down fails once more, then stops again
        assertEquals(202, settle.postPath("/v1/sessions/" + s + "/retry"));
        await("second reply.failed")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 2);
        sleep(Duration.ofSeconds(2));
        assertEquals(4, settle.modelCallsMentioning(marker));

        // the model is back; the next message moves the version past the failure: one reply covers both
        down.set(false);
        settle.post(s, marker + " later");
        await("reply")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.replies(s).size() == 1);
        assertEquals(1, settle.replies(s).getFirst()[0]);
        assertEquals(2, settle.replies(s).getFirst()[1]);
        List<String> types = new ArrayList<>();
        await("three webhooks")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 3);
        settle.webhooks(s).forEach(d -> types.add(d.json().get("type").asString()));
        assertEquals(List.of("reply.failed", "reply.failed", "reply.created"), types);
        assertEquals(409, settle.postPath("/v1/sessions/" + s + "/retry"), "nothing failed any more");
    }
}
