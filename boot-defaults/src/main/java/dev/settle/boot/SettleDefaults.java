package dev.settle.boot;

import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The default properties every Settle application starts from; each application adds only what differs (its name,
 * port, pool size, isolation, Kafka group and timeouts). The jars carry no application.properties, because the
 * quickstart and the bench run all three applications from one classpath; anything in the environment overrides
 * these.
 *
 * <ul>
 *   <li>Operations: liveness and readiness health groups (readiness covers the database and Kafka, see
 *       {@link Operations}), the Prometheus endpoint, and a log pattern that carries the session and turn ids from
 *       the MDC. JSON logs are one setting away: {@code LOGGING_STRUCTURED_FORMAT_CONSOLE=ecs} (or
 *       {@code logstash}).</li>
 *   <li>Database: a local MySQL/MariaDB {@code settle} database, migrated by the one changelog on start; the
 *       Connector/J settings below on every pool.</li>
 *   <li>Kafka: a local broker; events are JSON strings keyed by the session id as a string; producers wait for
 *       every in-sync replica; a new consumer group reads from the earliest offset.</li>
 * </ul>
 */
public final class SettleDefaults {
    /** The Liquibase changelog of the store contract (module {@code schema}). */
    public static final String CHANGELOG = "classpath:db/settle-changelog.sql";

    private SettleDefaults() {}

    /** A new mutable map of the shared defaults, for an application to add its own to. */
    public static Map<String, Object> properties() {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("spring.threads.virtual.enabled", "true");

        p.put("management.endpoints.web.exposure.include", "health,info,prometheus,metrics");
        p.put("management.endpoint.health.probes.enabled", "true");
        p.put("management.endpoint.health.group.liveness.include", "livenessState");
        p.put("management.endpoint.health.group.readiness.include", "readinessState,db,kafka");
        p.put("management.endpoint.health.group.readiness.show-details", "always");
        p.put("logging.pattern.level", "%5p [session=%X{sessionId:-} turn=%X{turnId:-}]");

        p.put("spring.liquibase.change-log", CHANGELOG);
        // MySQL's driver asks MariaDB for a keyword list it does not have: Liquibase logs a harmless stack trace
        p.put("logging.level.liquibase.database", "WARN");
        p.put(
                "spring.datasource.url",
                "jdbc:mysql://localhost:3306/settle?sslMode=DISABLED&allowPublicKeyRetrieval=true");
        p.put("spring.datasource.username", "root");
        p.put("spring.datasource.password", "");
        // Connector/J: keep autocommit/isolation/read-only state on the client instead of asking or re-setting it
        // around every transaction (the bench counted 10.4 statements per accept for 6 of its own), and cache
        // parsed statements
        p.put("spring.datasource.hikari.data-source-properties.useLocalSessionState", "true");
        p.put("spring.datasource.hikari.data-source-properties.cachePrepStmts", "true");
        p.put("spring.datasource.hikari.data-source-properties.prepStmtCacheSize", "250");
        // a statement longer than this is not cached and is parsed again on every execution: every fixed statement of
        // Settle must fit (StatementCacheFitTest; the turn's one read is 2,322 characters)
        p.put("spring.datasource.hikari.data-source-properties.prepStmtCacheSqlLimit", "4096");
        p.put("spring.datasource.hikari.data-source-properties.cacheServerConfiguration", "true");
        // Prepare each statement on the server once per connection and execute it in the binary protocol: the server
        // parses it once instead of on every execution. Each pooled connection keeps at most prepStmtCacheSize
        // statements prepared (closing the least recently used), so a server holds at most instances × pool size ×
        // Settle's distinct statements; past max_prepared_stmt_count the driver runs a statement client-side instead
        // (emulateUnsupportedPstmts, on by default), which costs server CPU, never a failure (docs/OPERATIONS.md)
        p.put("spring.datasource.hikari.data-source-properties.useServerPrepStmts", "true");
        // Spring binds a null parameter by asking the statement for its parameter types; with client-side prepared
        // statements Connector/J has none and throws (and Spring catches) an SQLException for every null bound.
        // Simple metadata answers VARCHAR for every parameter instead, and a client-side NULL is NULL whatever its type
        p.put("spring.datasource.hikari.data-source-properties.generateSimpleParameterMetadata", "true");

        p.put("spring.kafka.bootstrap-servers", "localhost:9092");
        p.put("spring.kafka.producer.key-serializer", "org.apache.kafka.common.serialization.StringSerializer");
        p.put("spring.kafka.producer.value-serializer", "org.apache.kafka.common.serialization.StringSerializer");
        p.put("spring.kafka.producer.acks", "all");
        p.put("spring.kafka.consumer.key-deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        p.put("spring.kafka.consumer.value-deserializer", "org.apache.kafka.common.serialization.StringDeserializer");
        p.put("spring.kafka.consumer.auto-offset-reset", "earliest");
        // Consumers commit their offsets once a second, not after every poll: at a few records per poll that was an
        // offset commit, a broker write, per event. Events are wake-up hints whose handlers are idempotent (an
        // answered version arms nothing, a claim with nothing to answer changes nothing), so what a crash redelivers
        // (at most the last seconds' events) costs a re-check, not a promise; a rebalance or a stop commits first.
        // An idle consumer's poll returns every second (the broker's long poll, fetch.max.wait.ms, is shorter still),
        // so a pending commit is at most about two seconds late.
        p.put("spring.kafka.listener.ack-mode", "TIME");
        p.put("spring.kafka.listener.ack-time", "1s");
        p.put("spring.kafka.listener.poll-timeout", "1s");
        return p;
    }
}
