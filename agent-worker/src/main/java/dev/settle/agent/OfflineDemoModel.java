package dev.settle.agent;

import dev.langchain4j.data.message.AiMessage;
import dev.langchain4j.data.message.ChatMessage;
import dev.langchain4j.data.message.UserMessage;
import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.output.FinishReason;
import dev.langchain4j.model.output.TokenUsage;

import java.util.ArrayList;
import java.util.List;

/**
 * The offline demo model, used when {@code SETTLE_LLM_URL} is unset: deterministic, no network. It answers
 * the user messages after the last reply in one sentence, so a merged burst is easy to see.
 */
public class OfflineDemoModel implements ChatModel {

    @Override
    public ChatResponse doChat(ChatRequest request) {
        List<String> burst = new ArrayList<>();
        for (ChatMessage m : request.messages()) {
            if (m instanceof AiMessage) {
                burst.clear();
            } else if (m instanceof UserMessage user) {
                burst.add(user.singleText());
            }
        }
        String text = burst.size() == 1
                ? "(offline demo model) You said: \"" + burst.getFirst() + "\"."
                : "(offline demo model) You sent " + burst.size() + " messages, answered together: \""
                  + String.join("\" + \"", burst) + "\".";
        int promptTokens = request.messages().stream().mapToInt(m -> m.toString().length() / 4).sum();
        return ChatResponse.builder()
                .aiMessage(AiMessage.from(text))
                .tokenUsage(new TokenUsage(promptTokens, text.length() / 4))
                .finishReason(FinishReason.STOP)
                .modelName("settle-offline-demo")
                .build();
    }
}
