package dev.settle.agent.demo;

import dev.langchain4j.agent.tool.P;
import dev.langchain4j.agent.tool.Tool;
import dev.settle.agent.tools.AgentTools;
import dev.settle.agent.tools.SideEffect;
import dev.settle.agent.tools.ToolCallContext;
import tools.jackson.databind.json.JsonMapper;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The demo's tool with an effect outside Settle's database: it POSTs a receipt to the configured receipt service
 * ({@code SETTLE_DEMO_RECEIPTURL}). The call cannot join the tool's transaction, so it is attempted at least once:
 * a worker that dies after the POST and before its commit is replaced by one that POSTs again. Every attempt sends
 * the execution's {@link ToolCallContext#idempotencyKey()} as the {@code Idempotency-Key} header, so a receiver
 * that deduplicates by it applies the receipt once.
 */
public class ReceiptTools implements AgentTools, AutoCloseable {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private final ReceiptClient client;

    public ReceiptTools(ReceiptClient client) {
        this.client = client;
    }

    @SideEffect
    @Tool(
            name = "send_receipt",
            value = "Sends the receipt of one booked expense to the user's accountant. "
                    + "Call it once per expense, only when the user asks for a receipt.")
    public String sendReceipt(
            @P("amount of the expense, a positive number with at most 2 decimals") BigDecimal amount,
            @P("the expense's category, one of the categories from list_categories") String category,
            @P(value = "optional short note", required = false) String note) {
        if (amount == null
                || amount.signum() <= 0
                || amount.compareTo(BookkeepingTools.MAX_AMOUNT) > 0
                || amount.stripTrailingZeros().scale() > 2) {
            throw new IllegalArgumentException("amount must be greater than 0, at most " + BookkeepingTools.MAX_AMOUNT
                    + ", with at most 2 decimals");
        }
        if (category == null || !BookkeepingTools.CATEGORIES.contains(category)) {
            throw new IllegalArgumentException("category must be one of " + BookkeepingTools.CATEGORIES);
        }
        if (note != null && note.length() > 500) {
            throw new IllegalArgumentException("note must be at most 500 characters");
        }
        String amountText = amount.setScale(2, RoundingMode.UNNECESSARY).toPlainString();
        Map<String, Object> receipt = new LinkedHashMap<>();
        receipt.put("session", ToolCallContext.sessionId());
        receipt.put("amount", amountText);
        receipt.put("category", category);
        receipt.put("note", note);
        String key = ToolCallContext.idempotencyKey();
        int status = client.post(JSON.writeValueAsString(receipt), key);
        if (status < 200 || status >= 300) {
            // unknown whether the service applied it: the next attempt sends the same key
            throw new IllegalStateException("the receipt service answered HTTP " + status);
        }
        return "receipt for " + amountText + " under " + category + " sent (Idempotency-Key " + key + ")";
    }

    @Override
    public void close() {
        client.close();
    }
}
