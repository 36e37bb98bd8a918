package dev.settle.agent;

import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.openai.OpenAiStreamingChatModel;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/** The model: any OpenAI-compatible server through langchain4j when SETTLE_LLM_URL is set, else the offline demo. */
@Configuration(proxyBeanMethods = false)
public class ModelConfiguration {
    private static final Logger log = LoggerFactory.getLogger(ModelConfiguration.class);

    @Bean
    StreamingChatModel streamingChatModel(AgentSettings settings) {
        AgentSettings.Llm llm = settings.llm();
        if (llm.url() == null || llm.url().isBlank()) {
            log.warn("SETTLE_LLM_URL is not set: using the OFFLINE DEMO MODEL (deterministic, no network)");
            return new OfflineDemoStreamingModel();
        }
        log.info("model: {} at {}", llm.model(), llm.url());
        return OpenAiStreamingChatModel.builder()
                .baseUrl(llm.url())
                .apiKey(llm.key() == null || llm.key().isBlank() ? "none" : llm.key())
                .modelName(llm.model())
                .timeout(llm.timeout())
                .httpClientBuilder(ModelHttpClient.builder()) // keeps Retry-After of a refused request
                .build();
    }
}
