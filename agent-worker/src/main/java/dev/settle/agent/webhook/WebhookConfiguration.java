package dev.settle.agent.webhook;

import dev.settle.agent.AgentSettings;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import java.util.Random;

/** The webhook pieces built from {@code settle.webhook.*}; the checks that can fail do so at startup. */
@Configuration(proxyBeanMethods = false)
public class WebhookConfiguration {

    @Bean
    EndpointGuard endpointGuard(AgentSettings settings) {
        return EndpointGuard.system(settings.webhook().allowprivate());
    }

    @Bean
    DefaultEndpoint defaultEndpoint(AgentSettings settings, EndpointGuard guard) {
        return DefaultEndpoint.check(settings.webhook().url(), guard);
    }

    @Bean(destroyMethod = "close")
    WebhookSender webhookSender(AgentSettings settings, EndpointGuard guard) {
        return new WebhookSender(settings.webhook().secret(), settings.webhook().timeout(), guard);
    }

    @Bean
    RetrySchedule retrySchedule(AgentSettings settings) {
        Long seed = settings.webhook().jitterSeed();
        return new RetrySchedule(settings.webhook().schedule(), seed == null ? new Random() : new Random(seed));
    }
}
