package dev.settle.agent;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.settle.agent.tools.ExactlyOnceToolExecutor;
import dev.settle.agent.tools.ToolCatalog;
import org.springframework.stereotype.Component;

import java.util.List;

/**
 * The model↔tool rounds of one turn (bounded, {@code settle.agent.max-rounds}, default 5). Every tool call
 * goes through the exactly-once executor and its result goes straight back to the model, so the model never
 * sees a call without its result. The last round offers no tools: it must answer in words.
 */
@Component
public class AgentLoop {
    private final ModelCaller model;
    private final PromptBuilder prompts;
    private final ToolCatalog catalog;
    private final ExactlyOnceToolExecutor tools;
    private final Turns turns;
    private final int maxRounds;

    public AgentLoop(ModelCaller model, PromptBuilder prompts, ToolCatalog catalog, ExactlyOnceToolExecutor tools,
                     Turns turns, AgentSettings settings) {
        this.model = model;
        this.prompts = prompts;
        this.catalog = catalog;
        this.tools = tools;
        this.turns = turns;
        this.maxRounds = Math.max(1, settings.agent().maxRounds());
    }

    /** @return the reply text */
    public String answer(SessionLease.Lease lease, long turnId, Conversation.Snapshot turn, Heartbeats.Beat beat) {
        List<ChatMessage> messages = prompts.prompt(turn);
        ExactlyOnceToolExecutor.TurnTools turnTools = tools.forTurn(lease, turnId, turn.fromVersion());
        for (int round = 1; ; round++) {
            boolean last = round >= maxRounds;
            AiMessage ai = model.call(lease.sessionId(), messages, last ? List.of() : catalog.specifications(),
                    beat::alive, (in, out) -> turns.countCall(lease, turnId, in, out));
            if (!ai.hasToolExecutionRequests() || last) {
                return ai.text() == null ? "" : ai.text();
            }
            messages.add(ai);
            for (ToolExecutionRequest call : ai.toolExecutionRequests()) {
                if (!beat.alive()) {
                    throw new ModelCaller.LeaseLostException();
                }
                messages.add(ToolExecutionResultMessage.from(call, turnTools.execute(call)));
            }
        }
    }
}
