package dev.settle.agent.demo;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.model.output.TokenUsage;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The offline demo model, used when {@code SETTLE_LLM_URL} is unset: deterministic, no network. It behaves
 * like a small bookkeeping assistant: for "lunch 35" or "spent 12.50 on coffee" it calls
 * {@code create_transaction} for every expense its unanswered messages mention, then answers in words;
 * otherwise it repeats the burst, so a merged burst is easy to see.
 *
 * <p>It <em>repeats</em> every booking of the unanswered span in each new turn, even when a discarded turn's
 * finished pairs show some of them done: that is what the idempotency key (span, tool, arguments, ordinal of
 * the identical call) is built for. Repeats get the recorded result for free, and two identical expenses
 * keep ordinals 1 and 2 — subtracting the bookings already shown would send the second one as ordinal 1 and
 * lose it. Its own calls of the current turn are the ones after the last user message (the prompt builder puts
 * earlier pairs right after the messages they answered); once it has made them it answers.
 */
public class OfflineDemoModel implements ChatModel {
    private static final Pattern SPENT_ON =
            Pattern.compile("(\\d+(?:\\.\\d{1,2})?)\\s+(?:on|for)\\s+([\\p{L}]+)", Pattern.CASE_INSENSITIVE);
    private static final Pattern WORD_AMOUNT =
            Pattern.compile("([\\p{L}]+)\\s+(\\d+(?:\\.\\d{1,2})?)", Pattern.CASE_INSENSITIVE);
    private static final Map<String, String> CATEGORY = Map.ofEntries(
            Map.entry("lunch", "food"),
            Map.entry("dinner", "food"),
            Map.entry("breakfast", "food"),
            Map.entry("food", "food"),
            Map.entry("meal", "food"),
            Map.entry("noodles", "food"),
            Map.entry("coffee", "coffee"),
            Map.entry("tea", "coffee"),
            Map.entry("latte", "coffee"),
            Map.entry("taxi", "transport"),
            Map.entry("bus", "transport"),
            Map.entry("train", "transport"),
            Map.entry("metro", "transport"),
            Map.entry("groceries", "groceries"),
            Map.entry("supermarket", "groceries"),
            Map.entry("movie", "entertainment"),
            Map.entry("cinema", "entertainment"),
            Map.entry("concert", "entertainment"));

    static final String CALL_ID = "demo_call_";

    record Expense(BigDecimal amount, String category) {}

    @Override
    public ChatResponse doChat(ChatRequest request) {
        List<String> burst = new ArrayList<>();
        List<String> results = new ArrayList<>();
        List<String> ownResults = new ArrayList<>();
        boolean called = false;
        for (ChatMessage m : request.messages()) {
            if (m instanceof AiMessage ai && !ai.hasToolExecutionRequests()) {
                burst.clear(); // a committed reply: what came before it is answered
                results.clear();
                ownResults.clear();
                called = false;
            } else if (m instanceof UserMessage user) {
                burst.add(user.singleText());
                ownResults.clear(); // calls made before a newer message were made for an earlier turn
                called = false;
            } else if (m instanceof AiMessage) {
                called = true;
            } else if (m instanceof ToolExecutionResultMessage result) {
                results.add(result.text());
                if (called) {
                    ownResults.add(result.text());
                }
            }
        }
        List<Expense> wanted = new ArrayList<>();
        burst.forEach(text -> wanted.addAll(expenses(text)));
        boolean toolsOffered = request.toolSpecifications() != null
                && !request.toolSpecifications().isEmpty();
        AiMessage answer;
        if (toolsOffered && !called && !wanted.isEmpty()) {
            List<ToolExecutionRequest> calls = new ArrayList<>();
            for (Expense e : wanted) {
                calls.add(ToolExecutionRequest.builder()
                        .id(CALL_ID + (calls.size() + 1))
                        .name("create_transaction")
                        .arguments("{\"amount\": " + e.amount().toPlainString() + ", \"category\": \"" + e.category()
                                + "\"}")
                        .build());
            }
            answer = AiMessage.from(calls);
        } else if (!results.isEmpty()) {
            answer = AiMessage.from("(offline demo model) Done: "
                    + String.join("; ", ownResults.isEmpty() ? results : ownResults) + ".");
        } else if (burst.size() == 1) {
            answer = AiMessage.from("(offline demo model) You said: \"" + burst.getFirst() + "\".");
        } else {
            answer = AiMessage.from("(offline demo model) You sent " + burst.size() + " messages, answered together: \""
                    + String.join("\" + \"", burst) + "\".");
        }
        int promptTokens = request.messages().stream()
                .mapToInt(m -> m.toString().length() / 4)
                .sum();
        return ChatResponse.builder()
                .aiMessage(answer)
                .tokenUsage(new TokenUsage(promptTokens, answer.toString().length() / 4))
                .finishReason(answer.hasToolExecutionRequests() ? FinishReason.TOOL_EXECUTION : FinishReason.STOP)
                .modelName("settle-offline-demo")
                .build();
    }

    /** Every expense in {@code text}, in order: "12.50 on coffee" and "lunch 35" alike, never one number twice. */
    static List<Expense> expenses(String text) {
        java.util.TreeMap<Integer, Expense> found = new java.util.TreeMap<>();
        List<int[]> taken = new ArrayList<>();
        Matcher on = SPENT_ON.matcher(text);
        while (on.find()) {
            found.put(on.start(), new Expense(new BigDecimal(on.group(1)).stripTrailingZeros(), category(on.group(2))));
            taken.add(new int[] {on.start(1), on.end(1)});
        }
        Matcher word = WORD_AMOUNT.matcher(text);
        while (word.find()) {
            int from = word.start(2);
            if (taken.stream().noneMatch(t -> t[0] == from)) {
                found.put(
                        word.start(),
                        new Expense(new BigDecimal(word.group(2)).stripTrailingZeros(), category(word.group(1))));
            }
        }
        return new ArrayList<>(found.values());
    }

    private static String category(String word) {
        String w = word.toLowerCase();
        if (w.endsWith("s") && CATEGORY.containsKey(w.substring(0, w.length() - 1))) {
            w = w.substring(0, w.length() - 1);
        }
        return CATEGORY.getOrDefault(w, "other");
    }
}
