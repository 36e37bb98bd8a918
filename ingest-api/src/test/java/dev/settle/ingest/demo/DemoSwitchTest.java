package dev.settle.ingest.demo;

import dev.settle.ingest.IngestApp;
import dev.settle.ingest.http.OpenApiController;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code settle.demo.enabled}: by default the demo ledger is served and described; set to false, its route does not
 * exist (404 problem+json, like any unknown route), the OpenAPI document does not list it, and the rest of the API
 * works as before.
 */
class DemoSwitchTest {
    static final String LEDGER = "/v1/ledger/entries?sessionId=demo-switch";
    static IngestApp withDemo;
    static IngestApp withoutDemo;

    @BeforeAll
    static void start() {
        withDemo = new IngestApp("demo_on");
        withoutDemo = new IngestApp("demo_off", Map.of(LedgerController.DEMO_ENABLED, "false"));
    }

    @AfterAll
    static void stop() {
        withDemo.close();
        withoutDemo.close();
    }

    static HttpResponse<String> spec(IngestApp app) {
        return app.send(HttpRequest.newBuilder(URI.create(app.base + OpenApiController.PATH))
                .GET()
                .build());
    }

    @Test
    void by_default_the_ledger_is_served_and_described() {
        HttpResponse<String> ledger = withDemo.get(LEDGER);
        assertEquals(200, ledger.statusCode(), ledger.body());
        assertEquals("{\"entries\":[],\"next\":null}", ledger.body());
        HttpResponse<String> spec = spec(withDemo);
        assertEquals(200, spec.statusCode());
        assertTrue(spec.body().contains("/v1/ledger/entries:"), "the ledger is described");
    }

    @Test
    void without_the_demo_the_ledger_route_does_not_exist_and_the_rest_works() {
        HttpResponse<String> ledger = withoutDemo.get(LEDGER);
        assertEquals(404, ledger.statusCode(), ledger.body());
        assertEquals(
                "application/problem+json",
                ledger.headers().firstValue("Content-Type").orElse(""));
        HttpResponse<String> unknown = withoutDemo.get("/v1/nothing-here");
        assertEquals(unknown.statusCode(), ledger.statusCode(), "the same answer as any unknown route");

        HttpResponse<String> spec = spec(withoutDemo);
        assertEquals(200, spec.statusCode());
        assertFalse(spec.body().contains("/v1/ledger"), "the ledger is not described");
        assertTrue(spec.body().contains("/v1/sessions/{sessionId}/messages:"), "the rest is");
        assertTrue(spec.body().contains("/v1/webhooks/deliveries:"), "the rest is");

        HttpResponse<String> post =
                withoutDemo.post("/v1/sessions/demo-switch/messages", "application/json", "{\"text\":\"hello\"}");
        assertEquals(202, post.statusCode(), post.body());
        HttpResponse<String> session = withoutDemo.get("/v1/sessions/demo-switch");
        assertEquals(200, session.statusCode(), session.body());
        assertEquals(200, withoutDemo.get("/v1/sessions/demo-switch/messages").statusCode());
        assertEquals(200, withoutDemo.get("/v1/webhooks/deliveries").statusCode());
    }
}
