package dev.settle.agent.webhook;

import dev.settle.agent.AgentSettings;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.BindException;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.MutablePropertySources;
import org.springframework.core.env.PropertySource;
import org.springframework.core.env.SystemEnvironmentPropertySource;

import java.time.Duration;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The documented SETTLE_WEBHOOK_* environment variables and property spellings bind to the settings. */
class WebhookSettingsBindingTest {

    static AgentSettings.Webhook bind(PropertySource<?> source) {
        MutablePropertySources sources = new MutablePropertySources();
        sources.addFirst(source);
        return new Binder(ConfigurationPropertySources.from(sources))
                .bindOrCreate("settle", AgentSettings.class)
                .webhook();
    }

    static AgentSettings.Webhook env(Map<String, Object> vars) {
        return bind(new SystemEnvironmentPropertySource("systemEnvironment", vars));
    }

    @Test
    void environment_variables_bind() {
        AgentSettings.Webhook w = env(Map.of(
                "SETTLE_WEBHOOK_URL", "https://hooks.example.com/settle",
                "SETTLE_WEBHOOK_SECRET", WebhookNode.SECRET + " " + WebhookNode.SECRET_2,
                "SETTLE_WEBHOOK_ALLOWUNSIGNED", "true",
                "SETTLE_WEBHOOK_SCHEDULE", "0s,200ms,400ms",
                "SETTLE_WEBHOOK_TIMEOUT", "3s",
                "SETTLE_WEBHOOK_ALLOWPRIVATE", "true",
                "SETTLE_WEBHOOK_MAXRETRYAFTER", "10m",
                "SETTLE_WEBHOOK_JITTERSEED", "42",
                "SETTLE_WEBHOOK_CLAIMMARGIN", "2s"));
        assertEquals("https://hooks.example.com/settle", w.url());
        assertEquals(WebhookNode.SECRET + " " + WebhookNode.SECRET_2, w.secret());
        assertTrue(w.allowunsigned());
        assertEquals(List.of(Duration.ZERO, Duration.ofMillis(200), Duration.ofMillis(400)), w.schedule());
        assertEquals(Duration.ofSeconds(3), w.timeout());
        assertTrue(w.allowprivate());
        assertEquals(Duration.ofMinutes(10), w.maxRetryAfter());
        assertEquals(42L, w.jitterSeed());
        assertEquals(Duration.ofSeconds(2), w.claimMargin());
    }

    @Test
    void defaults() {
        AgentSettings.Webhook w = env(Map.of());
        assertNull(w.url());
        assertEquals(
                List.of(
                        Duration.ZERO,
                        Duration.ofSeconds(5),
                        Duration.ofMinutes(5),
                        Duration.ofMinutes(30),
                        Duration.ofHours(2),
                        Duration.ofHours(5),
                        Duration.ofHours(10),
                        Duration.ofHours(10)),
                w.schedule());
        assertEquals(Duration.ofSeconds(15), w.timeout());
        assertFalse(w.allowprivate());
        assertFalse(w.allowunsigned(), "nothing goes out unsigned unless asked");
        assertEquals(Duration.ofHours(1), w.maxRetryAfter());
        assertNull(w.jitterSeed());
        assertEquals(Duration.ofSeconds(15), w.claimMargin());
    }

    @Test
    void allowprivate_binds_from_both_property_spellings() {
        assertTrue(bind(new MapPropertySource("p", Map.of("settle.webhook.allowprivate", "true")))
                .allowprivate());
        assertTrue(bind(new MapPropertySource("p", Map.of("settle.webhook.allow-private", "true")))
                .allowprivate());
    }

    @Test
    void allowunsigned_binds_from_both_property_spellings() {
        assertTrue(bind(new MapPropertySource("p", Map.of("settle.webhook.allowunsigned", "true")))
                .allowunsigned());
        assertTrue(bind(new MapPropertySource("p", Map.of("settle.webhook.allow-unsigned", "true")))
                .allowunsigned());
    }

    /** whsec_ + the standard base64 of {@code n} bytes. */
    static String secretOf(int n) {
        return "whsec_" + java.util.Base64.getEncoder().encodeToString(new byte[n]);
    }

    @Test
    void a_secret_outside_24_to_64_bytes_stops_the_worker_with_the_variable_named() {
        for (String bad : new String[] {
            secretOf(16),
            secretOf(23),
            secretOf(65),
            "whsec_a",
            "plain",
            "whsec_not base64!",
            WebhookNode.SECRET + " " + secretOf(16)
        }) {
            BindException e = assertThrows(BindException.class, () -> env(Map.of("SETTLE_WEBHOOK_SECRET", bad)), bad);
            Throwable root = e;
            while (root.getCause() != null) {
                root = root.getCause();
            }
            assertTrue(
                    root.getMessage().startsWith("SETTLE_WEBHOOK_SECRET (settle.webhook.secret): secret #"),
                    root.getMessage());
            assertFalse(root.getMessage().contains(bad), "the secret is not quoted");
        }
        assertEquals(
                secretOf(24), env(Map.of("SETTLE_WEBHOOK_SECRET", secretOf(24))).secret());
        assertEquals(
                secretOf(64), env(Map.of("SETTLE_WEBHOOK_SECRET", secretOf(64))).secret());
    }

    @Test
    void a_bad_schedule_fails_at_startup_with_the_variable_named() {
        BindException e = assertThrows(BindException.class, () -> env(Map.of("SETTLE_WEBHOOK_SCHEDULE", "0s,-5s")));
        Throwable root = e;
        while (root.getCause() != null) {
            root = root.getCause();
        }
        assertTrue(root.getMessage().contains("SETTLE_WEBHOOK_SCHEDULE"), root.getMessage());
    }
}
