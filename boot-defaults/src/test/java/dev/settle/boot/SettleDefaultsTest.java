package dev.settle.boot;

import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.MapConfigurationPropertySource;

import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;

/** The properties every Settle application starts from. */
class SettleDefaultsTest {

    @Test
    void every_application_gets_the_database_the_broker_and_the_health_groups() {
        Map<String, Object> p = SettleDefaults.properties();
        assertThat(p)
                .containsEntry("spring.liquibase.change-log", "classpath:db/settle-changelog.sql")
                .containsEntry(
                        "spring.datasource.url",
                        "jdbc:mysql://localhost:3306/settle?sslMode=DISABLED&allowPublicKeyRetrieval=true")
                .containsEntry("spring.datasource.username", "root")
                .containsEntry("spring.kafka.bootstrap-servers", "localhost:9092")
                .containsEntry("spring.kafka.producer.acks", "all")
                .containsEntry("spring.kafka.consumer.auto-offset-reset", "earliest")
                .containsEntry("spring.threads.virtual.enabled", "true")
                .containsEntry("management.endpoint.health.group.readiness.include", "readinessState,db,kafka")
                .containsEntry("management.endpoint.health.group.liveness.include", "livenessState")
                .containsEntry("spring.datasource.hikari.data-source-properties.useLocalSessionState", "true");
        assertThat(p.get("management.endpoints.web.exposure.include").toString().split(","))
                .contains("health", "prometheus");
        assertThat(p.get("logging.pattern.level").toString()).contains("%X{sessionId:-}", "%X{turnId:-}");
    }

    @Test
    void events_are_strings_both_ways() {
        Map<String, Object> p = SettleDefaults.properties();
        assertThat(p)
                .containsEntry(
                        "spring.kafka.producer.key-serializer",
                        "org.apache.kafka.common.serialization.StringSerializer")
                .containsEntry(
                        "spring.kafka.producer.value-serializer",
                        "org.apache.kafka.common.serialization.StringSerializer")
                .containsEntry(
                        "spring.kafka.consumer.key-deserializer",
                        "org.apache.kafka.common.serialization.StringDeserializer")
                .containsEntry(
                        "spring.kafka.consumer.value-deserializer",
                        "org.apache.kafka.common.serialization.StringDeserializer");
    }

    @Test
    void each_call_gives_a_new_map_an_application_may_add_to() {
        Map<String, Object> mine = SettleDefaults.properties();
        mine.put("spring.application.name", "x");
        mine.put("spring.datasource.url", "jdbc:mysql://elsewhere/settle");
        assertThat(SettleDefaults.properties())
                .doesNotContainKey("spring.application.name")
                .containsEntry("spring.kafka.bootstrap-servers", "localhost:9092")
                .doesNotContainEntry("spring.datasource.url", "jdbc:mysql://elsewhere/settle");
    }

    @Test
    void every_value_binds_as_spring_reads_it() {
        Binder binder = new Binder(new MapConfigurationPropertySource(SettleDefaults.properties()));
        assertThat(binder.bind("spring.threads.virtual.enabled", Boolean.class).get())
                .isTrue();
        assertThat(binder.bind("spring.datasource.hikari.data-source-properties", Map.class)
                        .get())
                .containsEntry("cachePrepStmts", "true")
                .containsEntry("useServerPrepStmts", "true")
                .containsEntry("prepStmtCacheSize", "250")
                .containsEntry("generateSimpleParameterMetadata", "true");
    }

    @Test
    void the_workers_can_switch_off_web_security_by_name() {
        assertThat(Operations.NO_WEB_SECURITY.split(","))
                .hasSize(5)
                .allSatisfy(name -> assertThat(name).startsWith("org.springframework.boot.security.autoconfigure."));
    }
}
