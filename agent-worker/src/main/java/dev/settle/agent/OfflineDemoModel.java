package dev.settle.agent;

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
 * {@code create_transaction} once per expense not booked yet, then answers in words; otherwise it repeats
 * the burst, so a merged burst is easy to see.
 */
public class OfflineDemoModel implements ChatModel {
    private static final Pattern SPENT_ON = Pattern.compile("(\\d+(?:\\.\\d{1,2})?)\\s+(?:on|for)\\s+([\\p{L}]+)", Pattern.CASE_INSENSITIVE);
    private static final Pattern WORD_AMOUNT = Pattern.compile("([\\p{L}]+)\\s+(\\d+(?:\\.\\d{1,2})?)", Pattern.CASE_INSENSITIVE);
    private static final Map<String, String> CATEGORY = Map.ofEntries(
            Map.entry("lunch", "food"), Map.entry("dinner", "food"), Map.entry("breakfast", "food"),
            Map.entry("food", "food"), Map.entry("meal", "food"), Map.entry("noodles", "food"),
            Map.entry("coffee", "coffee"), Map.entry("tea", "coffee"), Map.entry("latte", "coffee"),
            Map.entry("taxi", "transport"), Map.entry("bus", "transport"), Map.entry("train", "transport"),
            Map.entry("metro", "transport"), Map.entry("groceries", "groceries"), Map.entry("supermarket", "groceries"),
            Map.entry("movie", "entertainment"), Map.entry("cinema", "entertainment"), Map.entry("concert", "entertainment"));

    record Expense(BigDecimal amount, String category) {
    }

    @Override
    public ChatResponse doChat(ChatRequest request) {
        List<String> burst = new ArrayList<>();
        List<Expense> booked = new ArrayList<>();
        List<String> results = new ArrayList<>();
        for (ChatMessage m : request.messages()) {
            if (m instanceof AiMessage ai && !ai.hasToolExecutionRequests()) {
                burst.clear();
                booked.clear();
                results.clear();
            } else if (m instanceof UserMessage user) {
                burst.add(user.singleText());
            } else if (m instanceof AiMessage ai) {
                for (ToolExecutionRequest call : ai.toolExecutionRequests()) {
                    Expense e = parseCall(call);
                    if (e != null) {
                        booked.add(e);
                    }
                }
            } else if (m instanceof ToolExecutionResultMessage result) {
                results.add(result.text());
            }
        }
        List<Expense> wanted = new ArrayList<>();
        burst.forEach(text -> wanted.addAll(expenses(text)));
        List<Expense> missing = new ArrayList<>(wanted);
        booked.forEach(missing::remove);
        boolean toolsOffered = request.toolSpecifications() != null && !request.toolSpecifications().isEmpty();
        AiMessage answer;
        if (toolsOffered && !missing.isEmpty()) {
            List<ToolExecutionRequest> calls = new ArrayList<>();
            for (Expense e : missing) {
                calls.add(ToolExecutionRequest.builder().id("demo_call_" + (calls.size() + 1) + "_" + booked.size())
                        .name("create_transaction")
                        .arguments("{\"amount\": " + e.amount().toPlainString() + ", \"category\": \"" + e.category() + "\"}")
                        .build());
            }
            answer = AiMessage.from(calls);
        } else if (!results.isEmpty()) {
            answer = AiMessage.from("(offline demo model) Done: " + String.join("; ", results) + ".");
        } else if (burst.size() == 1) {
            answer = AiMessage.from("(offline demo model) You said: \"" + burst.getFirst() + "\".");
        } else {
            answer = AiMessage.from("(offline demo model) You sent " + burst.size() + " messages, answered together: \""
                    + String.join("\" + \"", burst) + "\".");
        }
        int promptTokens = request.messages().stream().mapToInt(m -> m.toString().length() / 4).sum();
        return ChatResponse.builder()
                .aiMessage(answer)
                .tokenUsage(new TokenUsage(promptTokens, answer.toString().length() / 4))
                .finishReason(answer.hasToolExecutionRequests() ? FinishReason.TOOL_EXECUTION : FinishReason.STOP)
                .modelName("settle-offline-demo")
                .build();
    }

    static List<Expense> expenses(String text) {
        List<Expense> found = new ArrayList<>();
        Matcher on = SPENT_ON.matcher(text);
        while (on.find()) {
            found.add(new Expense(new BigDecimal(on.group(1)).stripTrailingZeros(), category(on.group(2))));
        }
        if (!found.isEmpty()) {
            return found;
        }
        Matcher word = WORD_AMOUNT.matcher(text);
        while (word.find()) {
            found.add(new Expense(new BigDecimal(word.group(2)).stripTrailingZeros(), category(word.group(1))));
        }
        return found;
    }

    private static String category(String word) {
        String w = word.toLowerCase();
        if (w.endsWith("s") && CATEGORY.containsKey(w.substring(0, w.length() - 1))) {
            w = w.substring(0, w.length() - 1);
        }
        return CATEGORY.getOrDefault(w, "other");
    }

    private static Expense parseCall(ToolExecutionRequest call) {
        Matcher amount = Pattern.compile("\"amount\"\\s*:\\s*([0-9.eE+-]+)").matcher(call.arguments());
        Matcher category = Pattern.compile("\"category\"\\s*:\\s*\"([^\"]*)\"").matcher(call.arguments());
        if (!"create_transaction".equals(call.name()) || !amount.find() || !category.find()) {
            return null;
        }
        return new Expense(new BigDecimal(amount.group(1)).stripTrailingZeros(), category.group(1));
    }
}
