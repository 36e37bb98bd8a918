package dev.settle.agent.tools;

import dev.settle.agent.webhook.EndpointGuard;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Condition;
import org.springframework.context.annotation.ConditionContext;
import org.springframework.context.annotation.Conditional;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.type.AnnotatedTypeMetadata;

/** Offers the demo tool {@code send_receipt} only when a receipt service is configured. */
@Configuration(proxyBeanMethods = false)
@EnableConfigurationProperties(ReceiptSettings.class)
public class ReceiptToolConfiguration {

    /** {@code settle.demo.receipt-url} (or {@code SETTLE_DEMO_RECEIPTURL}) is set and not blank. */
    static final class ReceiptUrlSet implements Condition {
        @Override
        public boolean matches(ConditionContext context, AnnotatedTypeMetadata metadata) {
            return Binder.get(context.getEnvironment()).bind("settle.demo.receipt-url", String.class)
                    .map(url -> !url.isBlank()).orElse(false);
        }
    }

    @Bean(destroyMethod = "close")
    @Conditional(ReceiptUrlSet.class)
    ReceiptTools receiptTools(ReceiptSettings settings) {
        return new ReceiptTools(new ReceiptClient(settings.receiptUrl(), settings.receiptTimeout(),
                EndpointGuard.system(settings.receiptAllowprivate())));
    }
}
