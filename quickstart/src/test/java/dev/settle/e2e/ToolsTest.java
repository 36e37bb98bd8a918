package dev.settle.e2e;

import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelRequest;
import dev.settle.testsupport.ModelResponse;
import dev.settle.testsupport.ToolCall;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;

import java.math.BigDecimal;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

import static dev.settle.e2e.SettleSystem.sleep;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Tools that run exactly once, through discarded turns, identical calls and bad arguments. */
class ToolsTest {
    static final Duration LONG = Duration.ofSeconds(30);
    static SettleSystem settle;

    @BeforeAll
    static void start() {
        settle = new SettleSystem("tools");
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

    static long toolResults(ModelRequest r) {
        return r.messages().stream().filter(m -> "tool".equals(m.role())).count();
    }

    List<BigDecimal> ledger(String sessionId) {
        return settle.jdbc.queryForList("""
                SELECT l.amount FROM ledger_entry l JOIN chat_session s ON s.id = l.session_id
                 WHERE s.external_id = ? ORDER BY l.amount DESC""", BigDecimal.class, sessionId);
    }

    List<String> executions(String sessionId) {
        return settle.jdbc.queryForList("""
                SELECT CONCAT(t.tool_name, '#', t.ordinal, ':', t.status) FROM tool_execution t
                  JOIN chat_session s ON s.id = t.session_id WHERE s.external_id = ? ORDER BY t.id""", String.class, sessionId);
    }

    @Test
    void a_discarded_turn_never_repeats_its_side_effect_and_the_ledger_has_exactly_two_rows() {
        String s = SettleSystem.newSessionId();
        String lunch = "lunch 35 " + s;
        settle.model.respondWith(r -> {
            if (!r.body().contains(lunch)) {
                return ModelDouble.echo(r);
            }
            boolean coffee = r.body().contains("and coffee 12");
            long results = toolResults(r);
            if (!coffee && results == 0) {
                return ModelResponse.toolCall("create_transaction", "{\"amount\": 35, \"category\": \"food\"}");
            }
            if (!coffee) {
                return ModelResponse.text("Booked your lunch.").delay(Duration.ofMillis(1200));
            }
            if (results == 1) {
                // a naive model books everything again; the first call is the same intent, spelled differently
                return ModelResponse.toolCalls(List.of(
                        new ToolCall("c1", "create_transaction", "{ \"category\":\"food\",\"amount\":3.5e1 }"),
                        new ToolCall("c2", "create_transaction", "{\"amount\": 12, \"category\": \"coffee\"}")));
            }
            return ModelResponse.text("Booked lunch 35 and coffee 12.");
        });
        settle.post(s, lunch);
        await("the first turn waits for its final answer")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.model.requests().stream()
                        .anyMatch(r -> r.body().contains(lunch) && toolResults(r) == 1));
        settle.post(s, "and coffee 12");

        await("one reply")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        sleep(Duration.ofMillis(800));
        assertEquals(List.of(new BigDecimal("35.00"), new BigDecimal("12.00")), ledger(s));
        assertEquals(List.of("create_transaction#1:COMPLETED", "create_transaction#1:COMPLETED"), executions(s));
        assertEquals(List.of("DISCARDED", "COMMITTED"), settle.turnStates(s));
        assertEquals(
                "Booked lunch 35 and coffee 12.",
                settle.webhooks(s).getFirst().json().get("data").get("text").asString());
        assertEquals(
                2,
                settle.webhooks(s)
                        .getFirst()
                        .json()
                        .get("data")
                        .get("coversVersion")
                        .asLong());
        // the successor saw the completed pair of the discarded turn in its context
        ModelRequest successor = settle.model.requests().stream()
                .filter(r -> r.body().contains("and coffee 12") && toolResults(r) == 1)
                .findFirst()
                .orElseThrow();
        assertTrue(successor.body().contains("booked 35.00 under food"), successor.body());
    }

    @Test
    void two_identical_calls_in_one_turn_book_two_rows() {
        String s = SettleSystem.newSessionId();
        String text = "two coffees, 4 each " + s;
        settle.model.respondWith(r -> !r.body().contains(text)
                ? ModelDouble.echo(r)
                : toolResults(r) == 0
                        ? ModelResponse.toolCalls(List.of(
                                new ToolCall("a", "create_transaction", "{\"amount\":4,\"category\":\"coffee\"}"),
                                new ToolCall("b", "create_transaction", "{\"amount\":4,\"category\":\"coffee\"}")))
                        : ModelResponse.text("Booked two coffees."));
        settle.post(s, text);
        await("reply")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        assertEquals(List.of(new BigDecimal("4.00"), new BigDecimal("4.00")), ledger(s));
        assertEquals(List.of("create_transaction#1:COMPLETED", "create_transaction#2:COMPLETED"), executions(s));
    }

    @Test
    void bad_arguments_fail_the_execution_the_model_reads_the_error_and_the_turn_still_commits() {
        String s = SettleSystem.newSessionId();
        String text = "book something weird " + s;
        settle.model.respondWith(r -> !r.body().contains(text)
                ? ModelDouble.echo(r)
                : toolResults(r) == 0
                        ? ModelResponse.toolCalls(List.of(
                                new ToolCall("n", "create_transaction", "{\"amount\":-5,\"category\":\"food\"}"),
                                new ToolCall("t", "create_transaction", "{\"amount\":\"lots\",\"category\":\"food\"}"),
                                new ToolCall("m", "create_transaction", "{\"category\":\"food\"}"),
                                new ToolCall("h", "create_transaction", "{\"amount\":1e9,\"category\":\"food\"}"),
                                new ToolCall("c", "create_transaction", "{\"amount\":5,\"category\":\"yachts\"}"),
                                new ToolCall("j", "create_transaction", "{\"amount\":5,"),
                                new ToolCall("u", "delete_everything", "{}")))
                        : ModelResponse.text("Sorry, I could not book that."));
        settle.post(s, text);
        await("reply")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        assertEquals(List.of(), ledger(s));
        List<String> failed = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            failed.add("create_transaction#1:FAILED");
        }
        failed.add("delete_everything#1:FAILED");
        assertEquals(failed, executions(s));
        ModelRequest second = settle.model.requests().stream()
                .filter(r -> r.body().contains(text) && toolResults(r) == 7)
                .findFirst()
                .orElseThrow();
        List<String> results = second.messages().stream()
                .filter(m -> "tool".equals(m.role()))
                .map(m -> m.content())
                .toList();
        assertTrue(results.get(0).contains("amount must be greater than 0"), results.get(0));
        assertTrue(results.get(3).contains("at most 1000000"), results.get(3));
        assertTrue(results.get(4).contains("category must be one of"), results.get(4));
        assertTrue(results.get(6).contains("no tool named delete_everything"), results.get(6));
        assertEquals(List.of("COMMITTED"), settle.turnStates(s));
        JsonNode steps = settle.get("/v1/sessions/" + s + "/messages").get("messages");
        assertEquals(9, steps.size(), "user message, 7 tool steps, reply");
        assertEquals("tool", steps.get(1).get("role").asString());
        assertEquals("FAILED", steps.get(1).get("status").asString());
        assertEquals(-5, steps.get(1).get("arguments").get("amount").asInt());
        assertEquals("assistant", steps.get(8).get("role").asString());
    }

    @Test
    void an_execution_stuck_in_executing_is_failed_by_the_reaper_and_shown_by_the_messages_api() {
        String s = SettleSystem.newSessionId();
        settle.post(s, "hello " + s);
        await("reply")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        long pk = settle.sessionPk(s);
        settle.jdbc.update("""
                INSERT INTO tool_execution (session_id, turn_id, span_from, idem_key, call_id, tool_name, arguments_json,
                                            ordinal, side_effect, status, lease_token, created_at, started_at)
                VALUES (?, 0, 1, SHA2(UUID(), 256), 'stuck', 'create_transaction', '{"amount":1,"category":"food"}', 1, TRUE,
                        'EXECUTING', 'dead-holder', UTC_TIMESTAMP(6) - INTERVAL 1 HOUR, UTC_TIMESTAMP(6) - INTERVAL 1 HOUR)""", pk);
        await("the reaper failed it")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() ->
                        settle.get("/v1/sessions/" + s + "/messages").toString().contains("\"FAILED\""));
        JsonNode step = null;
        for (JsonNode m : settle.get("/v1/sessions/" + s + "/messages").get("messages")) {
            if ("tool".equals(m.get("role").asString())) {
                step = m;
            }
        }
        assertEquals("FAILED", step.get("status").asString());
        assertTrue(step.get("result").asString().contains("not applied"));
        assertEquals(List.of(), ledger(s));
    }

    @Test
    void the_turns_api_and_the_ledger_api_show_what_happened() {
        String s = SettleSystem.newSessionId();
        String text = "taxi 18.5 " + s;
        settle.model.respondWith(r -> !r.body().contains(text)
                ? ModelDouble.echo(r)
                : toolResults(r) == 0
                        ? ModelResponse.toolCall(
                                "create_transaction",
                                "{\"amount\":18.5,\"category\":\"transport\",\"note\":\"airport\"}")
                        : ModelResponse.text("Booked."));
        settle.post(s, text);
        await("reply")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        JsonNode turns = settle.get("/v1/sessions/" + s + "/turns").get("turns");
        assertEquals(1, turns.size());
        assertEquals("COMMITTED", turns.get(0).get("state").asString());
        assertEquals(1, turns.get(0).get("fromVersion").asLong());
        assertEquals(1, turns.get(0).get("toVersion").asLong());
        assertEquals(2, turns.get(0).get("modelCalls").asInt());
        JsonNode entries = settle.get("/v1/ledger/entries?sessionId=" + s).get("entries");
        assertEquals(1, entries.size());
        assertEquals(
                0,
                new BigDecimal("18.50").compareTo(entries.get(0).get("amount").decimalValue()));
        assertEquals("transport", entries.get(0).get("category").asString());
        assertEquals("airport", entries.get(0).get("note").asString());
    }

    /**
     * A client that reloads the conversation while a tool runs sees the step as EXECUTING
     * (tool, arguments, no result), and after the turn the same step COMPLETED with its result. The tool is held
     * inside its transaction by a lock on every gap of ledger_entry, for well under the lease TTL.
     */
    @Test
    void a_client_refreshing_mid_turn_sees_the_running_tool_step_and_then_its_result() throws Exception {
        String s = SettleSystem.newSessionId();
        String text = "museum 12 " + s;
        settle.model.respondWith(r -> !r.body().contains(text)
                ? ModelDouble.echo(r)
                : toolResults(r) == 0
                        ? ModelResponse.toolCall("create_transaction", "{\"amount\":12,\"category\":\"entertainment\"}")
                        : ModelResponse.text("Booked the museum."));
        JsonNode running;
        try (java.sql.Connection blocker = settle.holdLedgerGaps()) {
            settle.post(s, text);
            await("the tool step is visible while it runs")
                    .atMost(LONG)
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> toolStep(s) != null
                            && "EXECUTING".equals(toolStep(s).get("status").asString()));
            running = toolStep(s);
            blocker.rollback();
        }
        assertEquals("create_transaction", running.get("tool").asString());
        assertEquals(12, running.get("arguments").get("amount").asInt());
        assertTrue(running.get("result") == null || running.get("result").isNull(), running.toString());
        await("reply")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        JsonNode done = toolStep(s);
        assertEquals(running.get("stepId").asString(), done.get("stepId").asString());
        assertEquals("COMPLETED", done.get("status").asString());
        assertEquals("booked 12.00 under entertainment", done.get("result").asString());
        assertEquals(List.of(new BigDecimal("12.00")), ledger(s));
    }

    /** The session's only tool step in GET /messages, or null. */
    JsonNode toolStep(String s) {
        JsonNode step = null;
        for (JsonNode m : settle.get("/v1/sessions/" + s + "/messages").get("messages")) {
            if ("tool".equals(m.get("role").asString())) {
                assertTrue(step == null, "one tool step");
                step = m;
            }
        }
        return step;
    }
}
