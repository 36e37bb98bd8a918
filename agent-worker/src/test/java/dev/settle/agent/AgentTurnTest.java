package dev.settle.agent;

import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.settle.agent.demo.OfflineDemoModel;
import dev.settle.agent.lease.SessionLease;
import dev.settle.agent.tools.ExactlyOnceToolExecutor;
import dev.settle.agent.tools.ToolCatalog;
import dev.settle.agent.turn.Conversation;
import dev.settle.agent.turn.PromptBuilder;
import dev.settle.agent.turn.TurnOutcome;
import dev.settle.agent.turn.TurnRunner;
import dev.settle.agent.turn.Turns;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelRequest;
import dev.settle.testsupport.ModelResponse;
import dev.settle.testsupport.ToolCall;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.util.List;
import java.util.Map;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Whole turns through {@link TurnRunner} on a real agent-worker context: the offline demo model after a
 * discarded turn, and the HTTP model double for the round limit and for tool calls that cannot be recorded.
 */
class AgentTurnTest {
    static TestAgent demo;
    static TestAgent scripted;
    static ModelDouble model;

    @BeforeAll
    static void start() {
        demo = new TestAgent("demoturn", Map.of());
        model = ModelDouble.start();
        scripted = new TestAgent(
                "scriptedturn", Map.of("settle.llm.url", model.baseUrl(), "settle.llm.max-attempts", "1"));
    }

    @AfterAll
    static void stop() {
        demo.close();
        scripted.close();
        model.close();
    }

    static void say(TestAgent agent, long session, long version, String text) {
        agent.jdbc.update(
                "UPDATE chat_message SET text = ? WHERE session_id = ? AND version = ?", text, session, version);
    }

    static List<String> executions(TestAgent agent, long session) {
        return agent.jdbc.queryForList("""
                SELECT CONCAT(tool_name, '#', ordinal, ':', status) FROM tool_execution
                 WHERE session_id = ? ORDER BY id""", String.class, session);
    }

    static List<String> turnStates(TestAgent agent, long session) {
        return agent.jdbc.queryForList(
                "SELECT state FROM chat_turn WHERE session_id = ? ORDER BY id", String.class, session);
    }

    static String reply(TestAgent agent, long session) {
        return agent.jdbc.queryForObject(
                "SELECT text FROM chat_message WHERE session_id = ? AND role = 'assistant'", String.class, session);
    }

    static long toolResults(ModelRequest r) {
        return r.messages().stream().filter(m -> "tool".equals(m.role())).count();
    }

    @Test
    void the_demo_model_books_two_identical_expenses_twice_when_the_first_finished_in_a_discarded_turn() {
        long session = demo.sessionWithMessages(1);
        say(demo, session, 1, "coffee 4");
        // turn 1: the demo model's calls for "coffee 4", through the executor; then a second "coffee 4" arrives
        SessionLease.Lease lease = demo.bean(SessionLease.class).claim(session);
        Conversation.Snapshot snapshot = demo.bean(Conversation.class).load(lease);
        Turns turns = demo.bean(Turns.class);
        long turnId = turns.begin(lease, 1, 1);
        ChatResponse first = new OfflineDemoModel()
                .chat(ChatRequest.builder()
                        .messages(demo.bean(PromptBuilder.class).prompt(snapshot))
                        .toolSpecifications(demo.bean(ToolCatalog.class).specifications())
                        .build());
        ExactlyOnceToolExecutor.TurnTools tools =
                demo.bean(ExactlyOnceToolExecutor.class).forTurn(lease, turnId, 1);
        assertEquals(1, first.aiMessage().toolExecutionRequests().size());
        tools.position(1, 1); // as the agent loop records it: model call 1 of a turn answering version 1
        assertEquals(
                "booked 4.00 under coffee",
                tools.execute(first.aiMessage().toolExecutionRequests().getFirst()));
        demo.newMessage(session);
        say(demo, session, 2, "coffee 4");
        assertTrue(turns.discard(
                lease,
                turnId,
                "superseded: a newer message arrived while generating",
                Turns.Spent.NONE,
                Turns.Calls.NONE));
        demo.bean(SessionLease.class).release(lease);

        // the successor serves versions 1-2 with the real agent loop and the demo model
        assertEquals(TurnOutcome.COMMITTED, demo.bean(TurnRunner.class).run(session));
        assertEquals(
                List.of(new BigDecimal("4.00"), new BigDecimal("4.00")),
                demo.jdbc.queryForList(
                        "SELECT amount FROM ledger_entry WHERE session_id = ? ORDER BY id", BigDecimal.class, session));
        assertEquals(
                List.of("create_transaction#1:COMPLETED", "create_transaction#2:COMPLETED"), executions(demo, session));
        assertEquals(List.of("DISCARDED", "COMMITTED"), turnStates(demo, session));
        assertEquals(
                "(offline demo model) Done: booked 4.00 under coffee; booked 4.00 under coffee.", reply(demo, session));
    }

    @Test
    void a_turn_gets_at_most_five_model_calls_by_default_and_the_last_offers_no_tools() {
        String marker = "rounds-" + UUID.randomUUID();
        model.respondWith(r -> !r.body().contains(marker)
                ? ModelDouble.echo(r)
                : r.toolNames().isEmpty()
                        ? ModelResponse.text("Out of rounds.")
                        : ModelResponse.toolCall("list_categories", "{}"));
        long session = scripted.sessionWithMessages(1);
        say(scripted, session, 1, marker);
        assertEquals(5, scripted.bean(AgentSettings.class).agent().maxRounds());

        assertEquals(TurnOutcome.COMMITTED, scripted.bean(TurnRunner.class).run(session));
        List<ModelRequest> calls =
                model.requests().stream().filter(r -> r.body().contains(marker)).toList();
        assertEquals(5, calls.size());
        assertEquals(
                List.of(false, false, false, false, true),
                calls.stream().map(r -> r.toolNames().isEmpty()).toList());
        assertEquals(
                List.of(0L, 1L, 2L, 3L, 4L),
                calls.stream().map(AgentTurnTest::toolResults).toList());
        assertEquals(
                List.of(
                        "list_categories#1:COMPLETED",
                        "list_categories#2:COMPLETED",
                        "list_categories#3:COMPLETED",
                        "list_categories#4:COMPLETED"),
                executions(scripted, session));
        assertEquals("Out of rounds.", reply(scripted, session));
    }

    /**
     * A nameless call cannot be sent this way: langchain4j's OpenAI client refuses a blank tool name while parsing
     * the stream (the model call fails); ToolFencingTest hands one to the executor directly.
     */
    @Test
    void a_call_with_oversized_arguments_fails_the_model_reads_why_and_the_turn_still_commits() {
        String marker = "robust-" + UUID.randomUUID();
        String huge = "{\"amount\":5,\"category\":\"food\",\"note\":\"" + "x".repeat(70_000) + "\"}";
        model.respondWith(r -> !r.body().contains(marker)
                ? ModelDouble.echo(r)
                : toolResults(r) == 0
                        ? ModelResponse.toolCalls(List.of(
                                new ToolCall("huge", "create_transaction", huge),
                                new ToolCall("fine", "create_transaction", "{\"amount\":5,\"category\":\"food\"}")))
                        : ModelResponse.text("Sorry, I could not book that."));
        long session = scripted.sessionWithMessages(1);
        say(scripted, session, 1, marker);

        assertEquals(TurnOutcome.COMMITTED, scripted.bean(TurnRunner.class).run(session));
        assertEquals(
                List.of("create_transaction#1:FAILED", "create_transaction#1:COMPLETED"),
                executions(scripted, session));
        assertEquals(
                List.of(new BigDecimal("5.00")),
                scripted.jdbc.queryForList(
                        "SELECT amount FROM ledger_entry WHERE session_id = ?", BigDecimal.class, session),
                "only the good call wrote");
        ModelRequest second = model.requests().stream()
                .filter(r -> r.body().contains(marker) && toolResults(r) == 2)
                .findFirst()
                .orElseThrow();
        List<String> results = second.messages().stream()
                .filter(m -> "tool".equals(m.role()))
                .map(ModelRequest.Msg::content)
                .toList();
        assertEquals(
                List.of(
                        "{\"error\":\"arguments too large: " + huge.length() + " bytes, at most 65535\"}",
                        "booked 5.00 under food"),
                results);
        assertEquals("Sorry, I could not book that.", reply(scripted, session));
        assertEquals(List.of("COMMITTED"), turnStates(scripted, session));
    }
}
