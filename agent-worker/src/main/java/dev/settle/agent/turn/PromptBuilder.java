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

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.function.Predicate;

/**
 * The "clean model context" promise (docs/PROMISES.md): the prompt holds committed messages and finished tool call/result
 * pairs only, each pair whole, so the model knows what was already done.
 *
 * <p>The prompt is prefix-stable: system prompt, then everything in the order it happened. A finished call comes
 * after the messages its turn answered and before any newer message (before the reply of its span at the latest);
 * the calls one model call made form one assistant message, with the model's own call ids, followed by their
 * results. So every request of an interrupted turn is a prefix of its successor's first request, and a provider's
 * prompt cache serves the repeat.
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
        Deque<ToolExecutions.Execution> pairs = new ArrayDeque<>();
        for (ToolExecutions.Execution e : turn.toolPairs()) {
            if (e.toolName() != null && !e.toolName().isBlank()) {
                pairs.add(e);
            }
            // else: a call that named no tool (FAILED when it was made; the model read the error in that turn): a
            // function call without a name is not valid in OpenAI's protocol, and a server that checks it would refuse
            // the whole request, so every later turn of the session could fail on it
        }
        for (Conversation.Message m : turn.history()) {
            if ("user".equals(m.role())) {
                addPairs(messages, pairs, e -> answered(e) < m.version());
                messages.add(UserMessage.from(m.text()));
            } else {
                addPairs(messages, pairs, e -> e.spanFrom() <= m.coversFrom());
                messages.add(AiMessage.from(m.text()));
            }
        }
        for (Conversation.Message m : turn.pending()) {
            addPairs(messages, pairs, e -> answered(e) < m.version());
            messages.add(UserMessage.from(m.text()));
        }
        addPairs(messages, pairs, e -> true);
        return messages;
    }

    /** The last version the call's turn answered; a row without it belongs at the end of its span. */
    private static long answered(ToolExecutions.Execution e) {
        return e.answersVersion() == null ? Long.MAX_VALUE : e.answersVersion();
    }

    /**
     * Takes the pairs due before the next message ({@code due}, in row order) and adds them: the calls one model call
     * made form one assistant message, followed by their results in the same order.
     */
    private static void addPairs(
            List<ChatMessage> messages,
            Deque<ToolExecutions.Execution> pairs,
            Predicate<ToolExecutions.Execution> due) {
        List<ToolExecutions.Execution> group = new ArrayList<>();
        while (!pairs.isEmpty() && due.test(pairs.peekFirst())) {
            ToolExecutions.Execution e = pairs.removeFirst();
            if (!group.isEmpty() && !sameModelCall(group.getFirst(), e)) {
                addGroup(messages, group);
                group.clear();
            }
            group.add(e);
        }
        if (!group.isEmpty()) {
            addGroup(messages, group);
        }
    }

    private static boolean sameModelCall(ToolExecutions.Execution a, ToolExecutions.Execution b) {
        return a.modelCall() != null && a.modelCall().equals(b.modelCall()) && a.turnId() == b.turnId();
    }

    private static void addGroup(List<ChatMessage> messages, List<ToolExecutions.Execution> group) {
        List<ToolExecutionRequest> calls = new ArrayList<>();
        for (ToolExecutions.Execution e : group) {
            calls.add(ToolExecutionRequest.builder()
                    .id(callId(e))
                    .name(e.toolName())
                    .arguments(e.argumentsJson())
                    .build());
        }
        messages.add(AiMessage.from(calls));
        for (ToolExecutions.Execution e : group) {
            messages.add(
                    ToolExecutionResultMessage.from(callId(e), e.toolName(), e.result() == null ? "" : e.result()));
        }
    }

    /** The id the model gave the call (so the prompt repeats what the model saw), else one derived from the row. */
    private static String callId(ToolExecutions.Execution e) {
        return e.callId() == null || e.callId().isBlank() ? "call_settle_" + e.id() : e.callId();
    }
}
