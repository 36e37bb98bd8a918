package dev.settle.ingest;

import dev.settle.ingest.http.OpenApiController;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.web.bind.annotation.RequestMethod;
import org.springframework.web.servlet.mvc.method.RequestMappingInfo;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;
import org.yaml.snakeyaml.Yaml;
import tools.jackson.databind.JsonNode;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Health probes, Prometheus metrics, and the OpenAPI description matching the controllers both ways. */
class OperationsTest {
    static IngestApp app;

    @BeforeAll
    static void start() {
        app = new IngestApp("ops");
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    HttpResponse<String> anonymous(String path) {
        return app.send(
                HttpRequest.newBuilder(URI.create(app.base + path)).GET().build());
    }

    HttpResponse<String> management(String path) {
        return app.send(
                HttpRequest.newBuilder(URI.create(app.management + path)).GET().build());
    }

    @Test
    void liveness_and_readiness_on_the_management_port_say_up_and_nothing_more() {
        HttpResponse<String> live = management("/actuator/health/liveness");
        assertEquals(200, live.statusCode(), live.body());
        assertUpAndNothingMore(live.body());
        HttpResponse<String> ready = management("/actuator/health/readiness");
        assertEquals(200, ready.statusCode(), ready.body());
        assertUpAndNothingMore(ready.body());
        HttpResponse<String> health = management("/actuator/health");
        assertEquals(200, health.statusCode(), health.body());
        assertUpAndNothingMore(health.body());
    }

    /** Status UP; no component names, no details (the group names of /health are no secret). */
    static void assertUpAndNothingMore(String body) {
        JsonNode health =
                tools.jackson.databind.json.JsonMapper.builder().build().readTree(body);
        assertEquals("UP", health.get("status").asString(), body);
        for (String name : health.propertyNames()) {
            assertTrue(Set.of("status", "groups").contains(name), "health shows " + name + ": " + body);
        }
    }

    @Test
    void the_api_port_serves_no_actuator_endpoint_to_anyone() {
        for (String path : new String[] {
            "/actuator",
            "/actuator/prometheus",
            "/actuator/health",
            "/actuator/health/readiness",
            "/actuator/metrics",
            "/actuator/info",
            "/actuator/env"
        }) {
            for (String key : new String[] {null, IngestApp.KEY, IngestApp.ADMIN_KEY}) {
                HttpResponse<String> r = app.call("GET", path, key, null);
                assertEquals(404, r.statusCode(), path + " with key " + key + ": " + r.body());
                assertTrue(!r.body().contains("settle_") && !r.body().contains("UP"), r.body());
            }
        }
    }

    @Test
    void prometheus_counts_accepted_messages_by_tenant() {
        assertEquals(
                202,
                app.post("/v1/sessions/ops-metrics/messages", "application/json", "{\"text\":\"count me\"}")
                        .statusCode());
        HttpResponse<String> metrics = management("/actuator/prometheus");
        assertEquals(200, metrics.statusCode());
        assertTrue(metrics.body().contains("settle_messages_accepted_total{tenant=\"default\"}"), metrics.body());
        // every API request is timed once; Spring Security's filters are not observed one by one
        assertTrue(
                metrics.body()
                        .lines()
                        .anyMatch(l -> l.startsWith("http_server_requests_seconds_count{")
                                && l.contains("uri=\"/v1/sessions/{sessionId}/messages\"")
                                && l.contains("status=\"202\"")),
                metrics.body());
        assertTrue(!metrics.body().contains("spring_security_"), metrics.body());
    }

    @Test
    void the_openapi_description_is_public_and_matches_every_mapping_both_ways() {
        HttpResponse<String> spec = anonymous(OpenApiController.PATH);
        assertEquals(200, spec.statusCode());
        Map<String, Object> doc = new Yaml().load(spec.body());
        assertEquals("3.1.0", doc.get("openapi"));
        Set<String> described = new TreeSet<>();
        @SuppressWarnings("unchecked")
        Map<String, Map<String, Object>> paths = (Map<String, Map<String, Object>>) doc.get("paths");
        paths.forEach((path, item) -> item.keySet().stream()
                .filter(k -> Set.of("get", "put", "post", "delete", "patch", "head", "options")
                        .contains(k))
                .forEach(method -> described.add(method.toUpperCase(Locale.ROOT) + " " + path)));

        Set<String> mapped = new TreeSet<>();
        RequestMappingHandlerMapping mapping =
                app.context.getBean("requestMappingHandlerMapping", RequestMappingHandlerMapping.class);
        for (Map.Entry<RequestMappingInfo, ?> e : mapping.getHandlerMethods().entrySet()) {
            var handler = (org.springframework.web.method.HandlerMethod) e.getValue();
            if (!handler.getBeanType().getPackageName().startsWith("dev.settle.ingest")) {
                continue;
            }
            for (String path : e.getKey().getPatternValues()) {
                for (RequestMethod method : e.getKey().getMethodsCondition().getMethods()) {
                    mapped.add(method.name() + " " + path);
                }
            }
        }
        assertEquals(mapped, described, "the spec and the controllers differ");
        assertEquals(19, mapped.size(), mapped.toString());
    }
}
