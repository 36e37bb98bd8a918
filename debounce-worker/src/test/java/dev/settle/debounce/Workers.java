package dev.settle.debounce;

import dev.settle.embedded.AppLauncher;
import dev.settle.testsupport.SharedInfra;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.simple.JdbcClient;

import java.util.LinkedHashMap;
import java.util.Map;

/** Starts debounce-worker the way the launcher does: default properties, then overrides. */
final class Workers {
    private Workers() {}

    static ConfigurableApplicationContext start(String jdbcUrl, String group, Map<String, Object> overrides) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("spring.datasource.url", jdbcUrl);
        p.put("spring.kafka.bootstrap-servers", SharedInfra.kafkaBootstrap());
        p.put("spring.kafka.consumer.group-id", group);
        p.put("server.port", "0"); // the actuator; several workers share this JVM
        p.put("settle.debounce.window", "600ms");
        p.put("settle.debounce.maxwait", "1500ms");
        // The scheduled sweep would wake every unanswered test session again; tests that want it turn it on.
        p.put("settle.sweeper.interval", "1h");
        p.put("settle.sweeper.grace", "1h");
        p.put("logging.level.org.apache.kafka", "warn");
        p.put("logging.level.kafka", "warn");
        p.put("logging.level.org.apache.kafka.clients.consumer.internals.ConsumerCoordinator", "info");
        p.putAll(overrides);
        return AppLauncher.run(DebounceWorkerApplication.class, DebounceWorkerApplication.defaultProperties(), p);
    }

    static JdbcClient jdbc(ConfigurableApplicationContext context) {
        return context.getBean(JdbcClient.class);
    }
}
