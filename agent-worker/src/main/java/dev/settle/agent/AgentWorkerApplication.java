package dev.settle.agent;

import dev.settle.boot.Operations;
import dev.settle.boot.SettleDefaults;
import dev.settle.boot.StoreTransactions;
import dev.settle.contracts.Topology;
import dev.settle.schema.DebounceTiming;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Import;

import java.util.Map;

/**
 * The agent worker: claims a session's lease when its timer fires, answers every pending message in one
 * turn, commits the reply only if it is still current, and delivers replies from the outbox by webhook.
 */
@SpringBootApplication
@EnableConfigurationProperties({AgentSettings.class, DebounceTiming.class})
@Import({Topology.class, Operations.class, StoreTransactions.class})
public class AgentWorkerApplication {

    public static Map<String, Object> defaultProperties() {
        Map<String, Object> p = SettleDefaults.properties();
        p.put("spring.application.name", "agent-worker");
        p.put("spring.autoconfigure.exclude", Operations.NO_WEB_SECURITY);
        // serves only the actuator (health probes, Prometheus); SERVER_PORT moves it
        p.put("server.port", "8082");
        p.put("spring.datasource.hikari.maximum-pool-size", "20");
        // every transaction of the agent asks for READ COMMITTED: as the pool's default, no transaction has to
        // send SET SESSION TRANSACTION ISOLATION twice (four round trips fewer per turn)
        p.put("spring.datasource.hikari.transaction-isolation", "TRANSACTION_READ_COMMITTED");
        p.put("spring.kafka.consumer.group-id", "settle-agent");
        p.put("spring.kafka.listener.concurrency", "3");
        // a crashed instance's partitions move to the others within seconds, not the 45 s default
        p.put("spring.kafka.consumer.properties.session.timeout.ms", "10000");
        p.put("spring.kafka.consumer.properties.heartbeat.interval.ms", "3000");
        return p;
    }

    public static void main(String[] args) {
        SpringApplication app = new SpringApplication(AgentWorkerApplication.class);
        app.setDefaultProperties(defaultProperties());
        app.run(args);
    }
}
