package dev.settle.agent.turn;

import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.settle.agent.tools.ToolExecutions;
import org.junit.jupiter.api.Test;

import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;

class PromptBuilderTest {
    static ToolExecutions.Execution pair(long id, String tool, String status) {
        return new ToolExecutions.Execution(
                id, 1, 1, null, "call_" + id, tool, "{}", status, false, "result " + id, "t", null, null, 0);
    }

    @Test
    void a_finished_call_that_named_no_tool_is_left_out_of_every_later_prompt() {
        Conversation.Snapshot turn = new Conversation.Snapshot(
                1,
                1,
                1,
                null,
                List.of(),
                List.of(new Conversation.Message("m1", "user", "lunch 35", 1, 0)),
                List.of(pair(1, "", "FAILED"), pair(2, "create_transaction", "COMPLETED"), pair(3, null, "FAILED")),
                null,
                false,
                false);
        List<ChatMessage> prompt = new PromptBuilder("system").prompt(turn);
        // system, the user message, then only the named pair: its call and its result
        assertEquals(4, prompt.size(), prompt.toString());
        AiMessage call = (AiMessage) prompt.get(2);
        assertEquals(
                "create_transaction", call.toolExecutionRequests().getFirst().name());
        assertEquals("result 2", ((ToolExecutionResultMessage) prompt.get(3)).text());
    }
}
