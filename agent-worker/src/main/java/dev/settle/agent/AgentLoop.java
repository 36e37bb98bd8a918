package dev.settle.agent;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.settle.agent.tools.ExactlyOnceToolExecutor;
import dev.settle.agent.tools.ToolCatalog;
import org.springframework.stereotype.Component;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * The model↔tool rounds of one turn (bounded, {@code settle.agent.max-rounds}, default 5). Text is streamed
 * into the turn's {@link TurnStream}; every tool call goes through the exactly-once executor and its result
 * goes straight back to the model, so the model never sees a call without its result. The last round offers
 * no tools: it must answer in words. An interrupt lets a running tool call finish but starts no other.
 */
@Component
public class AgentLoop {
    private final ModelStream model;
    private final PromptBuilder prompts;
    private final ToolCatalog catalog;
    private final ExactlyOnceToolExecutor tools;
    private final Turns turns;
    private final int maxRounds;

    public AgentLoop(ModelStream model, PromptBuilder prompts, ToolCatalog catalog, ExactlyOnceToolExecutor tools,
                     Turns turns, AgentSettings settings) {
        this.model = model;
        this.prompts = prompts;
        this.catalog = catalog;
        this.tools = tools;
        this.turns = turns;
        this.maxRounds = Math.max(1, settings.agent().maxRounds());
    }

    /** Usage of a turn so far, kept for the record when the turn is discarded. */
    public static final class Usage {
        int promptTokens;
        int completionTokens;
        int promptChars;
        final AtomicInteger streamedChars = new AtomicInteger();
        boolean complete = true;
    }

    /** @return the reply text: everything the model streamed in this turn */
    public String answer(SessionLease.Lease lease, long turnId, Conversation.Snapshot turn, TurnControl control,
                         TurnStream stream, Usage usage) {
        List<ChatMessage> messages = prompts.prompt(turn);
        ExactlyOnceToolExecutor.TurnTools turnTools = tools.forTurn(lease, turnId, turn.fromVersion());
        StringBuilder text = new StringBuilder();
        for (int round = 1; ; round++) {
            boolean last = round >= maxRounds;
            usage.promptChars = messages.stream().mapToInt(m -> m.toString().length()).sum();
            usage.complete = false;
            ModelStream.Result result = model.call(lease.sessionId(), messages,
                    last ? List.of() : catalog.specifications(), control, stream::delta, usage.streamedChars);
            usage.complete = true;
            usage.promptTokens += result.promptTokens();
            usage.completionTokens += result.completionTokens();
            if (!turns.countCall(lease, turnId, result.promptTokens(), result.completionTokens())) {
                throw new LeaseLostException();
            }
            AiMessage ai = result.message();
            if (ai.text() != null) {
                text.append(ai.text());
            }
            if (!ai.hasToolExecutionRequests() || last) {
                return text.toString();
            }
            messages.add(ai);
            for (ToolExecutionRequest call : ai.toolExecutionRequests()) {
                if (!control.leaseAlive()) {
                    throw new LeaseLostException();
                }
                if (control.interruptReason() != null) {
                    throw new TurnControl.Interrupted(control.interruptReason());
                }
                messages.add(ToolExecutionResultMessage.from(call, turnTools.execute(call)));
            }
        }
    }
}
