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
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;

/**
 * What every Settle application shares for operations: liveness and readiness health groups (readiness covers
 * the database and Kafka), the Prometheus endpoint, and a log pattern that carries the session and turn ids from
 * the MDC. JSON logs are one setting away: {@code LOGGING_STRUCTURED_FORMAT_CONSOLE=ecs} (or {@code logstash}).
 */
@Configuration(proxyBeanMethods = false)
public class Operations {
    static final long KAFKA_TIMEOUT_MS = 2000;

    /**
     * The workers serve only actuator on their port; when the ingest API's web security is on the same classpath
     * (the quickstart and the bench run all three applications in one JVM) it must not lock those endpoints.
     */
    public static final String NO_WEB_SECURITY = String.join(",",
            "org.springframework.boot.security.autoconfigure.SecurityAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.UserDetailsServiceAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.web.servlet.ServletWebSecurityAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.web.servlet.SecurityFilterAutoConfiguration",
            "org.springframework.boot.security.autoconfigure.actuate.web.servlet.ManagementWebSecurityAutoConfiguration");

    public static Map<String, Object> defaultProperties() {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("management.endpoints.web.exposure.include", "health,info,prometheus,metrics");
        p.put("management.endpoint.health.probes.enabled", "true");
        p.put("management.endpoint.health.group.liveness.include", "livenessState");
        p.put("management.endpoint.health.group.readiness.include", "readinessState,db,kafka");
        p.put("management.endpoint.health.group.readiness.show-details", "always");
        p.put("logging.pattern.level", "%5p [session=%X{sessionId:-} turn=%X{turnId:-}]");
        // Connector/J: keep autocommit/isolation/read-only state on the client instead of asking or re-setting it
        // around every transaction (the bench counted 10.4 statements per accept for 6 of its own), and cache
        // parsed statements
        p.put("spring.datasource.hikari.data-source-properties.useLocalSessionState", "true");
        p.put("spring.datasource.hikari.data-source-properties.cachePrepStmts", "true");
        p.put("spring.datasource.hikari.data-source-properties.prepStmtCacheSize", "250");
        p.put("spring.datasource.hikari.data-source-properties.prepStmtCacheSqlLimit", "2048");
        p.put("spring.datasource.hikari.data-source-properties.cacheServerConfiguration", "true");
        // MySQL's driver asks MariaDB for a keyword list it does not have: Liquibase logs a harmless stack trace
        p.put("logging.level.liquibase.database", "WARN");
        return p;
    }

    /** Health {@code kafka}: the cluster answers a describeCluster within two seconds. */
    @Bean
    HealthIndicator kafkaHealthIndicator(KafkaAdmin admin) {
        return () -> {
            Map<String, Object> config = new HashMap<>(admin.getConfigurationProperties());
            config.put(AdminClientConfig.REQUEST_TIMEOUT_MS_CONFIG, (int) KAFKA_TIMEOUT_MS);
            config.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, (int) KAFKA_TIMEOUT_MS);
            try (AdminClient client = AdminClient.create(config)) {
                var cluster = client.describeCluster(new DescribeClusterOptions().timeoutMs((int) KAFKA_TIMEOUT_MS));
                int nodes = cluster.nodes().get(KAFKA_TIMEOUT_MS, TimeUnit.MILLISECONDS).size();
                return Health.up().withDetail("clusterId", cluster.clusterId().get(KAFKA_TIMEOUT_MS, TimeUnit.MILLISECONDS))
                        .withDetail("nodes", nodes).build();
            } catch (Exception e) {
                return Health.down().withDetail("error", e.toString()).build();
            }
        };
    }
}
