package dev.settle.ingest;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.web.bind.annotation.RequestMethod;
import org.springframework.web.servlet.mvc.method.RequestMappingInfo;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;
import org.yaml.snakeyaml.Yaml;

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
        return app.send(HttpRequest.newBuilder(URI.create(app.base + path)).GET().build());
    }

    @Test
    void liveness_and_readiness_with_database_and_kafka() {
        HttpResponse<String> live = anonymous("/actuator/health/liveness");
        assertEquals(200, live.statusCode(), live.body());
        assertTrue(live.body().contains("\"UP\""), live.body());
        HttpResponse<String> ready = anonymous("/actuator/health/readiness");
        assertEquals(200, ready.statusCode(), ready.body());
        assertTrue(ready.body().contains("\"db\"") && ready.body().contains("\"kafka\""), ready.body());
        assertTrue(ready.body().contains("clusterId"), ready.body());
    }

    @Test
    void prometheus_counts_accepted_messages_by_tenant() {
        assertEquals(202, app.post("/v1/sessions/ops-metrics/messages", "application/json", "{\"text\":\"count me\"}")
                .statusCode());
        HttpResponse<String> metrics = anonymous("/actuator/prometheus");
        assertEquals(200, metrics.statusCode());
        assertTrue(metrics.body().contains("settle_messages_accepted_total{tenant=\"default\"}"), metrics.body());
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
                .filter(k -> Set.of("get", "put", "post", "delete", "patch", "head", "options").contains(k))
                .forEach(method -> described.add(method.toUpperCase(Locale.ROOT) + " " + path)));

        Set<String> mapped = new TreeSet<>();
        RequestMappingHandlerMapping mapping = app.context.getBean("requestMappingHandlerMapping",
                RequestMappingHandlerMapping.class);
        for (Map.Entry<RequestMappingInfo, ?> e : mapping.getHandlerMethods().entrySet()) {
            var handler = (org.springframework.web.method.HandlerMethod) e.getValue();
            if (!handler.getBeanType().getPackageName().equals("dev.settle.ingest")) {
                continue;
            }
            for (String path : e.getKey().getPatternValues()) {
                for (RequestMethod method : e.getKey().getMethodsCondition().getMethods()) {
                    mapped.add(method.name() + " " + path);
                }
            }
        }
        assertEquals(mapped, described, "the spec and the controllers differ");
        assertEquals(18, mapped.size(), mapped.toString());
    }
}
