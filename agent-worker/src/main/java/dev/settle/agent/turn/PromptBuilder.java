package dev.settle.agent.turn;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.settle.agent.AgentSettings;
import dev.settle.agent.tools.ToolExecutions;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.stereotype.Component;

import java.util.ArrayList;
import java.util.List;

/**
 * The "clean model context" promise (docs/PROMISES.md): the prompt holds committed messages and finished tool call/result
 * pairs only, each pair whole. A committed reply is preceded by the pairs of its span; the pending messages
 * are followed by the pairs already finished for the current span (kept from discarded turns), so the model
 * knows what was already done.
 */
@Component
public class PromptBuilder {
    /** The system prompt when neither {@code settle.agent.system-prompt} nor a {@link DefaultSystemPrompt} is given. */
    public static final String NEUTRAL = "You are a helpful assistant. Several user messages in a row form one "
            + "request: answer them together, once. Tool calls already made and their results are shown to you.";

    private final String systemPrompt;

    @Autowired
    public PromptBuilder(AgentSettings settings, ObjectProvider<DefaultSystemPrompt> defaultPrompt) {
        this(
                settings.agent().systemPrompt() != null
                        ? settings.agent().systemPrompt()
                        : defaultPrompt
                                .getIfAvailable(() -> new DefaultSystemPrompt(NEUTRAL))
                                .text());
    }

    PromptBuilder(String systemPrompt) {
        this.systemPrompt = systemPrompt;
    }

    /** The system prompt of every turn. */
    public String systemPrompt() {
        return systemPrompt;
    }

    public List<ChatMessage> prompt(Conversation.Snapshot turn) {
        List<ChatMessage> messages = new ArrayList<>();
        messages.add(SystemMessage.from(systemPrompt));
        for (Conversation.Message m : turn.history()) {
            if ("user".equals(m.role())) {
                messages.add(UserMessage.from(m.text()));
            } else {
                addPairs(messages, turn.toolPairs(), m.coversFrom());
                messages.add(AiMessage.from(m.text()));
            }
        }
        for (Conversation.Message m : turn.pending()) {
            messages.add(UserMessage.from(m.text()));
        }
        addPairs(messages, turn.toolPairs(), turn.fromVersion());
        return messages;
    }

    private static void addPairs(List<ChatMessage> messages, List<ToolExecutions.Execution> pairs, long spanFrom) {
        for (ToolExecutions.Execution e : pairs) {
            if (e.spanFrom() != spanFrom) {
                continue;
            }
            if (e.toolName() == null || e.toolName().isBlank()) {
                // a call that named no tool (FAILED when it was made; the model read the error in that turn): a
                // function call without a name is not valid in OpenAI's protocol, and a server that checks it would
                // refuse the whole request, so every later turn of the session could fail on it
                continue;
            }
            String id = "call_settle_" + e.id();
            ToolExecutionRequest call = ToolExecutionRequest.builder()
                    .id(id)
                    .name(e.toolName())
                    .arguments(e.argumentsJson())
                    .build();
            messages.add(AiMessage.from(call));
            messages.add(ToolExecutionResultMessage.from(id, e.toolName(), e.result() == null ? "" : e.result()));
        }
    }
}
