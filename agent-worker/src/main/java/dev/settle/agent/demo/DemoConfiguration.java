package dev.settle.agent.demo;

import dev.settle.agent.model.FallbackModel;
import dev.settle.agent.turn.DefaultSystemPrompt;
import dev.settle.agent.webhook.EndpointGuard;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBooleanProperty;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.type.AnnotatedTypeMetadata;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The demo room, present while {@code settle.demo.enabled} (default true): the bookkeeping tools, their system
 * prompt, the offline demo model for a deployment without {@code settle.llm.url}, and {@code send_receipt} when a
 * receipt service is configured. The engine knows none of these classes: it finds the tools as
 * {@link dev.settle.agent.tools.AgentTools} beans, the prompt as a {@link DefaultSystemPrompt} and the model as a
 * {@link FallbackModel}.
 */
@Configuration(proxyBeanMethods = false)
@ConditionalOnBooleanProperty(name = DemoConfiguration.ENABLED, matchIfMissing = true)
@EnableConfigurationProperties(DemoSettings.class)
public class DemoConfiguration {
    public static final String ENABLED = "settle.demo.enabled";

    static final String SYSTEM_PROMPT = "You are Settle's bookkeeping assistant. Several user messages in a row "
            + "form one request: answer them together, once. Book each expense the user mentions with "
            + "create_transaction, exactly once; calls already made and their results are shown to you.";

    /** {@code settle.demo.receipt-url} (or {@code SETTLE_DEMO_RECEIPTURL}) is set and not blank. */
    static final class ReceiptUrlSet implements Condition {
        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            return Binder.get(context.getEnvironment())
                    .bind("settle.demo.receipt-url", String.class)
                    .map(url -> !url.isBlank())
                    .orElse(false);
        }
    }

    @Bean
    BookkeepingTools bookkeepingTools(JdbcTemplate jdbc) {
        return new BookkeepingTools(jdbc);
    }

    @Bean(destroyMethod = "close")
    @Conditional(ReceiptUrlSet.class)
    ReceiptTools receiptTools(DemoSettings settings) {
        return new ReceiptTools(new ReceiptClient(
                settings.receiptUrl(),
                settings.receiptTimeout(),
                EndpointGuard.system(settings.receiptAllowprivate())));
    }

    @Bean
    DefaultSystemPrompt bookkeepingPrompt() {
        return new DefaultSystemPrompt(SYSTEM_PROMPT);
    }

    @Bean
    FallbackModel offlineDemoModel() {
        return new FallbackModel(new OfflineDemoStreamingModel(), "the OFFLINE DEMO MODEL (deterministic, no network)");
    }
}
