package dev.settle.agent.turn;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.settle.agent.AgentSettings;
import dev.settle.agent.lease.LeaseLostException;
import dev.settle.agent.lease.SessionLease;
import dev.settle.agent.lease.TurnControl;
import dev.settle.agent.model.ModelStream;
import dev.settle.agent.stream.TurnStream;
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

    public AgentLoop(
            ModelStream model,
            PromptBuilder prompts,
            ToolCatalog catalog,
            ExactlyOnceToolExecutor tools,
            Turns turns,
            AgentSettings settings) {
        this.model = model;
        this.prompts = prompts;
        this.catalog = catalog;
        this.tools = tools;
        this.turns = turns;
        this.maxRounds = Math.max(1, settings.agent().maxRounds());
    }

    /**
     * What a turn has streamed so far and whether a model call is cut off mid-stream; written only by the turn's
     * own {@link #answer} (the model stream counts {@code streamedChars} as deltas arrive), read as
     * {@link #spent()} when the turn is discarded.
     */
    static final class Usage {
        private int promptChars;
        private final AtomicInteger streamedChars = new AtomicInteger();
        private int charsBeforeCall;
        private boolean callOpen;
        private Turns.Calls calls = Turns.Calls.NONE;

        /** The model calls that finished, with the usage their servers reported. */
        Turns.Calls calls() {
            return calls;
        }

        Turns.Spent spent() {
            int streamed = streamedChars.get();
            return new Turns.Spent(streamed, callOpen, promptChars, streamed - charsBeforeCall);
        }
    }

    /** The characters a request sends as text: contents, tool names and arguments, tool results. */
    static int chars(List<ChatMessage> messages) {
        int n = 0;
        for (ChatMessage m : messages) {
            n += switch (m) {
                case SystemMessage s -> length(s.text());
                case UserMessage u ->
                    u.hasSingleText() ? length(u.singleText()) : u.toString().length();
                case AiMessage a ->
                    length(a.text())
                            + (a.hasToolExecutionRequests()
                                    ? a.toolExecutionRequests().stream()
                                            .mapToInt(r -> length(r.name()) + length(r.arguments()))
                                            .sum()
                                    : 0);
                case ToolExecutionResultMessage t -> length(t.text());
                default -> m.toString().length();
            };
        }
        return n;
    }

    private static int length(String s) {
        return s == null ? 0 : s.length();
    }

    /** @return the reply text: everything the model streamed in this turn */
    String answer(
            SessionLease.Lease lease,
            long turnId,
            Conversation.Snapshot turn,
            TurnControl control,
            TurnStream stream,
            Usage usage) {
        List<ChatMessage> messages = prompts.prompt(turn);
        ExactlyOnceToolExecutor.TurnTools turnTools = tools.forTurn(lease, turnId, turn.fromVersion());
        StringBuilder text = new StringBuilder();
        for (int round = 1; ; round++) {
            boolean last = round >= maxRounds;
            usage.promptChars = chars(messages);
            usage.charsBeforeCall = usage.streamedChars.get();
            usage.callOpen = true;
            ModelStream.Result result = model.call(
                    lease.sessionId(),
                    messages,
                    last ? List.of() : catalog.specifications(),
                    control,
                    stream::delta,
                    usage.streamedChars);
            usage.callOpen = false;
            usage.calls = usage.calls.plus(result.promptTokens(), result.cachedTokens(), result.completionTokens());
            AiMessage ai = result.message();
            if (ai.text() != null) {
                text.append(ai.text());
            }
            if (!ai.hasToolExecutionRequests() || last) {
                return text.toString();
            }
            // the calls alone, as every later prompt renders them from their rows: the requests stay prefix-stable
            messages.add(AiMessage.from(ai.toolExecutionRequests()));
            turnTools.position(round, turn.toVersion());
            for (ToolExecutionRequest call : ai.toolExecutionRequests()) {
                if (!control.leaseAlive()) {
                    throw new LeaseLostException();
                }
                stream.sync(); // the turn's events so far come before the tool's
                if (control.interruptReason() != null) {
                    throw new TurnControl.Interrupted(control.interruptReason());
                }
                messages.add(ToolExecutionResultMessage.from(call, turnTools.execute(call)));
            }
        }
    }
}
