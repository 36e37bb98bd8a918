package dev.settle.boot;

import org.apache.kafka.clients.admin.AdminClient;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.DescribeClusterOptions;
import org.springframework.boot.health.contributor.Health;
import org.springframework.boot.health.contributor.HealthIndicator;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.kafka.core.KafkaAdmin;

import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * The beans every Settle application imports for operations: the {@code kafka} health indicator that the
 * readiness group of {@link SettleDefaults} includes. The properties that configure the health groups, the
 * Prometheus endpoint and the log pattern are in {@link SettleDefaults#properties()}.
 */
@Configuration(proxyBeanMethods = false)
public class Operations {
    static final long KAFKA_TIMEOUT_MS = 2000;

    /**
     * The workers serve only actuator on their port; when the ingest API's web security is on the same classpath
     * (the quickstart and the bench run all three applications in one JVM) it must not lock those endpoints.
     */
    public static final String NO_WEB_SECURITY = String.join(
            ",",
            "org.springframework.boot.security.autoconfigure.SecurityAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.UserDetailsServiceAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.web.servlet.ServletWebSecurityAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.web.servlet.SecurityFilterAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.actuate.web.servlet.ManagementWebSecurityAutoConfiguration");

    /** Health {@code kafka}: the cluster answers a describeCluster within two seconds. */
    @Bean
    HealthIndicator kafkaHealthIndicator(KafkaAdmin admin) {
        return () -> {
            Map<String, Object> config = new HashMap<>(admin.getConfigurationProperties());
            config.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) KAFKA_TIMEOUT_MS);
            config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) KAFKA_TIMEOUT_MS);
            try (AdminClient client = AdminClient.create(config)) {
                var cluster = client.describeCluster(new DescribeClusterOptions().timeoutMs((int) KAFKA_TIMEOUT_MS));
                int nodes = cluster.nodes()
                        .get(KAFKA_TIMEOUT_MS, TimeUnit.MILLISECONDS)
                        .size();
                return Health.up()
                        .withDetail("clusterId", cluster.clusterId().get(KAFKA_TIMEOUT_MS, TimeUnit.MILLISECONDS))
                        .withDetail("nodes", nodes)
                        .build();
            } catch (Exception e) {
                return Health.down().withDetail("error", e.toString()).build();
            }
        };
    }
}
