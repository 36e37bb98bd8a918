package dev.settle.debounce;

import dev.settle.boot.Operations;
import dev.settle.boot.SettleDefaults;
import dev.settle.boot.StoreTransactions;
import dev.settle.contracts.Topology;
import dev.settle.schema.DebounceTiming;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;

import java.util.Map;

/**
 * The debounce worker: turns bursts of MessageAccepted into one SessionReady per burst, through the
 * {@code debounce_timer} table ({@link DebounceTimers}, {@link TimerFirer}, {@link StrandedSessionSweeper}).
 * Any number of instances may run against one database and one consumer group.
 *
 * <p>The jar carries no application.properties (several Settle apps share one classpath in the quickstart);
 * {@link #defaultProperties()} holds the shared {@link SettleDefaults} and what this application adds, and anything
 * in the environment overrides them.
 */
@SpringBootApplication
@Import({Topology.class, Operations.class, StoreTransactions.class})
@EnableConfigurationProperties({
    DebounceTiming.class,
    DebounceSettings.class,
    PacingSettings.class,
    SweeperSettings.class
})
public class DebounceWorkerApplication {

    public static Map<String, Object> defaultProperties() {
        Map<String, Object> p = SettleDefaults.properties();
        p.put("spring.application.name", "debounce-worker");
        p.put("spring.autoconfigure.exclude", Operations.NO_WEB_SECURITY);
        // serves only the actuator (health probes, Prometheus); SERVER_PORT moves it
        p.put("server.port", "8081");
        // Consistent (lock-free) reads of chat_session inside INSERT ... SELECT, and no gap locks on the timer
        // index, so arming never waits on ingest or agent transactions (REPEATABLE READ would take S-locks).
        p.put("spring.datasource.hikari.transaction-isolation", "TRANSACTION_READ_COMMITTED");
        // TimerFirer holds its timer-row locks while it waits for acks: fail fast when the broker is away.
        p.put("spring.kafka.producer.properties.max.block.ms", "5000");
        // ... and every millisecond of linger is added to every fire (Kafka 4's default is 5 ms): a round's
        // SessionReady records go out at once, batched by what is already queued
        p.put("spring.kafka.producer.properties.linger.ms", "0");
        p.put("spring.kafka.consumer.group-id", "settle-debounce");
        return p;
    }

    /**
     * A record the listener cannot arm (database away) is retried for a few seconds, then skipped so the
     * partition moves on: that session is caught by the {@link StrandedSessionSweeper} once its grace is over.
     */
    @Bean
    DefaultErrorHandler kafkaErrorHandler() {
        return new DefaultErrorHandler(new FixedBackOff(1_000L, 5));
    }

    public static void main(String[] args) {
        SpringApplication app = new SpringApplication(DebounceWorkerApplication.class);
        app.setDefaultProperties(defaultProperties());
        app.run(args);
    }
}
