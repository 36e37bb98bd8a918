package dev.settle.agent;

import dev.langchain4j.model.chat.ChatModel;
import dev.langchain4j.model.openai.OpenAiChatModel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The model: any OpenAI-compatible server through langchain4j when SETTLE_LLM_URL is set, else the offline demo. */
@Configuration(proxyBeanMethods = false)
public class ModelConfiguration {
    private static final Logger log = LoggerFactory.getLogger(ModelConfiguration.class);

    @Bean
    ChatModel chatModel(AgentSettings settings) {
        AgentSettings.Llm llm = settings.llm();
        if (llm.url() == null || llm.url().isBlank()) {
            log.warn("SETTLE_LLM_URL is not set: using the OFFLINE DEMO MODEL (deterministic echo, no network)");
            return new OfflineDemoModel();
        }
        log.info("model: {} at {}", llm.model(), llm.url());
        return OpenAiChatModel.builder()
                .baseUrl(llm.url())
                .apiKey(llm.key() == null || llm.key().isBlank() ? "none" : llm.key())
                .modelName(llm.model())
                .timeout(llm.timeout())
                .maxRetries(0) // ModelCaller retries, with backoff and the lease in view
                .build();
    }
}
