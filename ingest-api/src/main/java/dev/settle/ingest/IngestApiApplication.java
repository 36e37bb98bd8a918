package dev.settle.ingest;

import dev.settle.boot.Operations;
import dev.settle.boot.SettleDefaults;
import dev.settle.boot.StoreTransactions;
import dev.settle.contracts.Topology;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Import;

import java.util.Map;

/**
 * The ingest API: accepts chat messages (202 only after commit), publishes {@code MessageAccepted}, and
 * serves the session views. {@link #defaultProperties()}: the shared {@link SettleDefaults} and what this
 * application adds (there is no application.properties, because the quickstart runs all three applications from
 * one classpath).
 */
@SpringBootApplication(
        excludeName = "org.springframework.boot.security.autoconfigure.UserDetailsServiceAutoConfiguration")
@EnableConfigurationProperties(IngestSettings.class)
@Import({Topology.class, Operations.class, StoreTransactions.class})
public class IngestApiApplication {
    /** {@code SETTLE_MANAGEMENT_PORT}: where actuator (health, Prometheus) is served; never the API port. */
    public static final int DEFAULT_MANAGEMENT_PORT = 9080;

    public static Map<String, Object> defaultProperties() {
        Map<String, Object> p = SettleDefaults.properties();
        p.put("spring.application.name", "ingest-api");
        p.put("spring.datasource.hikari.maximum-pool-size", "20");
        p.put("spring.kafka.producer.properties.linger.ms", "1");
        p.put("spring.kafka.producer.properties.max.block.ms", "2000");
        p.put("spring.mvc.problemdetails.enabled", "true");
        p.put("server.error.whitelabel.enabled", "false");
        // actuator only on the management port, never on the API port; health says UP or DOWN and nothing more
        p.put("management.server.port", "${settle.management.port:" + DEFAULT_MANAGEMENT_PORT + "}");
        p.put("management.endpoint.health.show-details", "never");
        p.put("management.endpoint.health.show-components", "never");
        p.put("management.endpoint.health.group.readiness.show-details", "never");
        p.put("management.endpoint.health.group.readiness.show-components", "never");
        // no static resources: every route of this application is a controller with an access rule
        p.put("spring.web.resources.add-mappings", "false");
        return p;
    }

    public static void main(String[] args) {
        SpringApplication app = new SpringApplication(IngestApiApplication.class);
        app.setDefaultProperties(defaultProperties());
        app.run(args);
    }
}
