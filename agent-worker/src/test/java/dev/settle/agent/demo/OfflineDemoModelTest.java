package dev.settle.agent.demo;

import dev.langchain4j.agent.tool.ToolExecutionRequest;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.SystemMessage;
import dev.langchain4j.data.message.ToolExecutionResultMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.request.ChatRequest;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/** The offline demo model on its own: what it books and when it stops booking. */
class OfflineDemoModelTest {
    static final List<ToolSpecification> TOOLS =
            List.of(ToolSpecification.builder().name("create_transaction").build());
    final OfflineDemoModel model = new OfflineDemoModel();

    static OfflineDemoModel.Expense expense(String amount, String category) {
        return new OfflineDemoModel.Expense(new BigDecimal(amount).stripTrailingZeros(), category);
    }

    AiMessage answer(List<ChatMessage> messages, boolean tools) {
        ChatRequest.Builder request = ChatRequest.builder().messages(messages);
        if (tools) {
            request.toolSpecifications(TOOLS);
        }
        return model.chat(request.build()).aiMessage();
    }

    static List<String> arguments(AiMessage ai) {
        return ai.toolExecutionRequests().stream()
                .map(ToolExecutionRequest::arguments)
                .toList();
    }

    @Test
    void it_reads_both_spellings_of_an_expense_also_in_one_message() {
        assertEquals(List.of(expense("12.50", "coffee")), OfflineDemoModel.expenses("spent 12.50 on coffee"));
        assertEquals(List.of(expense("35", "food")), OfflineDemoModel.expenses("lunch 35"));
        assertEquals(
                List.of(expense("35", "food"), expense("12.5", "coffee")),
                OfflineDemoModel.expenses("lunch 35, and I spent 12.50 on coffee"));
        assertEquals(
                List.of(expense("12.5", "coffee"), expense("35", "food")),
                OfflineDemoModel.expenses("spent 12.50 on coffee and lunch 35"));
        assertEquals(List.of(), OfflineDemoModel.expenses("hello there"));
    }

    @Test
    void it_books_everything_its_pending_messages_ask_for_then_answers() {
        List<ChatMessage> prompt = new ArrayList<>(List.of(
                SystemMessage.from("system"), UserMessage.from("lunch 35"), UserMessage.from("spent 12.50 on coffee")));
        AiMessage calls = answer(prompt, true);
        assertEquals(
                List.of("{\"amount\": 35, \"category\": \"food\"}", "{\"amount\": 12.5, \"category\": \"coffee\"}"),
                arguments(calls));
        prompt.add(calls);
        prompt.add(ToolExecutionResultMessage.from(calls.toolExecutionRequests().get(0), "booked 35.00 under food"));
        prompt.add(ToolExecutionResultMessage.from(calls.toolExecutionRequests().get(1), "booked 12.50 under coffee"));
        AiMessage done = answer(prompt, true);
        assertFalse(done.hasToolExecutionRequests());
        assertEquals("(offline demo model) Done: booked 35.00 under food; booked 12.50 under coffee.", done.text());
    }

    @Test
    void a_successor_repeats_every_booking_of_the_span_even_those_a_discarded_turn_finished() {
        // "coffee 4", booked by a turn that was then discarded by a second "coffee 4": the prompt shows the first
        // booking as a finished pair right after the message it answered, with the id the model gave it; both
        // coffees are asked for again, so the executor sees ordinals 1 (the recorded result) and 2 (a new row)
        ToolExecutionRequest earlier = ToolExecutionRequest.builder()
                .id("demo_call_1")
                .name("create_transaction")
                .arguments("{\"amount\": 4, \"category\": \"coffee\"}")
                .build();
        List<ChatMessage> prompt = new ArrayList<>(List.of(
                SystemMessage.from("system"),
                UserMessage.from("coffee 4"),
                AiMessage.from(earlier),
                ToolExecutionResultMessage.from(earlier, "booked 4.00 under coffee"),
                UserMessage.from("coffee 4")));
        AiMessage calls = answer(prompt, true);
        assertEquals(
                List.of("{\"amount\": 4, \"category\": \"coffee\"}", "{\"amount\": 4, \"category\": \"coffee\"}"),
                arguments(calls));
        prompt.add(calls);
        calls.toolExecutionRequests()
                .forEach(c -> prompt.add(ToolExecutionResultMessage.from(c, "booked 4.00 under coffee")));
        assertEquals(
                "(offline demo model) Done: booked 4.00 under coffee; booked 4.00 under coffee.",
                answer(prompt, true).text());
    }

    @Test
    void a_committed_reply_closes_what_came_before_it_and_without_tools_it_answers_in_words() {
        List<ChatMessage> prompt = List.of(
                SystemMessage.from("system"),
                UserMessage.from("lunch 35"),
                AiMessage.from("Done."),
                UserMessage.from("thanks"));
        assertEquals(
                "(offline demo model) You said: \"thanks\".",
                answer(prompt, true).text());
        assertEquals(
                "(offline demo model) You said: \"lunch 35\".",
                answer(List.of(SystemMessage.from("system"), UserMessage.from("lunch 35")), false)
                        .text());
    }
}
