package dev.settle.agent.demo;

import dev.langchain4j.agent.tool.P;
import dev.langchain4j.agent.tool.Tool;
import dev.settle.agent.tools.AgentTools;
import dev.settle.agent.tools.SideEffect;
import dev.settle.agent.tools.ToolCallContext;
import org.springframework.jdbc.core.JdbcTemplate;

import java.math.BigDecimal;
import java.math.RoundingMode;
import java.util.List;

/** The demo's tools: a bookkeeping assistant that books expenses in {@code ledger_entry}. */
public class BookkeepingTools implements AgentTools {
    public static final List<String> CATEGORIES =
            List.of("food", "coffee", "transport", "groceries", "entertainment", "other");
    static final BigDecimal MAX_AMOUNT = new BigDecimal("1000000");

    public static final String INSERT = """
            INSERT INTO ledger_entry (session_id, execution_id, amount, category, note, created_at)
            VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(6))""";

    private final JdbcTemplate jdbc;

    public BookkeepingTools(JdbcTemplate jdbc) {
        this.jdbc = jdbc;
    }

    @Tool(name = "list_categories", value = "Lists the ledger categories a transaction can be booked under.")
    public List<String> listCategories() {
        return CATEGORIES;
    }

    @SideEffect
    @Tool(name = "create_transaction", value = "Books an expense in the user's ledger. Call once per expense.")
    public String createTransaction(
            @P("amount spent, a positive number with at most 2 decimals") BigDecimal amount,
            @P("one of the categories from list_categories") String category,
            @P(value = "optional short note", required = false) String note) {
        if (amount == null) {
            throw new IllegalArgumentException("amount is required");
        }
        if (amount.signum() <= 0 || amount.compareTo(MAX_AMOUNT) > 0) {
            throw new IllegalArgumentException("amount must be greater than 0 and at most " + MAX_AMOUNT);
        }
        if (amount.stripTrailingZeros().scale() > 2) {
            throw new IllegalArgumentException("amount must have at most 2 decimals");
        }
        if (category == null || !CATEGORIES.contains(category)) {
            throw new IllegalArgumentException("category must be one of " + CATEGORIES);
        }
        if (note != null && note.length() > 500) {
            throw new IllegalArgumentException("note must be at most 500 characters");
        }
        BigDecimal booked = amount.setScale(2, RoundingMode.UNNECESSARY);
        jdbc.update(INSERT, ToolCallContext.sessionId(), ToolCallContext.executionId(), booked, category, note);
        return "booked " + booked.toPlainString() + " under " + category;
    }
}
