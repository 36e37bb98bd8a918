package dev.settle.agent.webhook;

import dev.settle.agent.AgentSettings;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

import java.util.Random;

/** The webhook pieces built from {@code settle.webhook.*}; the checks that can fail do so at startup. */
@Configuration(proxyBeanMethods = false)
class WebhookConfiguration {
    private static final Logger log = LoggerFactory.getLogger(WebhookConfiguration.class);

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
        String secret = settings.webhook().secret();
        AgentSettings.Webhook webhook = settings.webhook();
        if (secret == null || secret.isBlank()) {
            if (webhook.allowunsigned()) {
                log.warn("SETTLE_WEBHOOK_SECRET is not set and SETTLE_WEBHOOK_ALLOWUNSIGNED is true: webhooks to "
                        + "SETTLE_WEBHOOK_URL go out unsigned (no webhook-signature header), so receivers cannot "
                        + "verify them; tenants' own endpoints are signed with their own secrets");
            } else if (webhook.hasUrl()) {
                log.error("SETTLE_WEBHOOK_SECRET is not set: webhooks to SETTLE_WEBHOOK_URL are NOT SENT (each "
                        + "attempt fails with that reason and follows the retry schedule). Set a secret (whsec_ + "
                        + "base64 of 24-64 random bytes) or SETTLE_WEBHOOK_ALLOWUNSIGNED=true");
            }
        }
        return new WebhookSender(secret, settings.webhook().timeout(), guard);
    }

    @Bean
    RetrySchedule retrySchedule(AgentSettings settings) {
        Long seed = settings.webhook().jitterSeed();
        return new RetrySchedule(settings.webhook().schedule(), seed == null ? new Random() : new Random(seed));
    }
}
