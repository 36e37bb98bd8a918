package dev.settle.agent.model;

import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.openai.OpenAiStreamingChatModel;
import dev.settle.agent.AgentSettings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * The model: any OpenAI-compatible server through langchain4j when SETTLE_LLM_URL is set, else the
 * {@link FallbackModel} a room provides (the demo's offline model); with neither, the worker does not start.
 */
@Configuration(proxyBeanMethods = false)
class ModelConfiguration {
    private static final Logger log = LoggerFactory.getLogger(ModelConfiguration.class);

    @Bean
    StreamingChatModel streamingChatModel(AgentSettings settings, ObjectProvider<FallbackModel> fallback) {
        AgentSettings.Llm llm = settings.llm();
        if (llm.url() == null || llm.url().isBlank()) {
            FallbackModel model = fallback.getIfAvailable();
            if (model == null) {
                throw new IllegalStateException("SETTLE_LLM_URL (settle.llm.url) is not set and the demo is off "
                        + "(SETTLE_DEMO_ENABLED / settle.demo.enabled=false), so there is no model: set settle.llm.url "
                        + "to an OpenAI-compatible base URL ending in /v1, or turn the demo on");
            }
            log.warn("SETTLE_LLM_URL is not set: using {}", model.description());
            return model.model();
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
