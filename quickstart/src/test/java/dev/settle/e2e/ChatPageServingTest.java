package dev.settle.e2e;

import dev.settle.quickstart.SettleLauncher;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Who serves the chat page: the quickstart's ingest API, without a key, and nothing else; a production ingest API
 * (its own defaults, the same classpath) and the workers' ports serve no page, and the page opens no route of the
 * API to a caller without a key.
 */
class ChatPageServingTest {
    static final HttpClient HTTP = HttpClient.newHttpClient();
    static SettleSystem settle;
    static ConfigurableApplicationContext production;

    @BeforeAll
    static void start() {
        settle = SettleSystem.withPage("pageserving", Map.of());
        production = settle.launcher.startIngestApi(Map.of("server.port", "0"));
    }

    @AfterAll
    static void stop() {
        settle.close();
    }

    static HttpResponse<String> get(int port, String path) throws Exception {
        return HTTP.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + path))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
    }

    @Test
    void the_quickstart_serves_the_page_and_its_files_without_a_key() throws Exception {
        int port = SettleLauncher.port(settle.ingest);
        HttpResponse<String> root = get(port, "/");
        assertEquals(200, root.statusCode());
        assertTrue(root.headers().firstValue("Content-Type").orElseThrow().startsWith("text/html"));
        assertTrue(root.body().contains("<script type=\"module\" src=\"chat.js\">"), root.body());
        assertEquals(root.body(), get(port, "/index.html").body());
        for (String file : new String[] {"/chat.js", "/settle.js"}) {
            HttpResponse<String> js = get(port, file);
            assertEquals(200, js.statusCode(), file);
            assertTrue(js.headers().firstValue("Content-Type").orElseThrow().contains("javascript"), file);
        }
        assertEquals(200, get(port, "/page.css").statusCode());
    }

    @Test
    void beside_the_page_nothing_answers_without_a_key() throws Exception {
        int port = SettleLauncher.port(settle.ingest);
        assertEquals(401, get(port, "/v1/sessions/x").statusCode());
        assertEquals(401, get(port, "/v1/sessions/x/events").statusCode());
        assertEquals(401, get(port, "/v1/index.html").statusCode());
        for (String path : new String[] {
            "/nothing.js",
            "/settle-page/index.html",
            "/static/index.html",
            "/webjars/x.js",
            "/db/settle-changelog.sql",
            "/dev/settle/quickstart/Quickstart.class",
            "/actuator/health",
            "/error"
        }) {
            int status = get(port, path).statusCode();
            assertTrue(status == 404 || status == 401, path + " answered " + status);
        }
    }

    @Test
    void a_production_ingest_api_serves_no_page() throws Exception {
        int port = SettleLauncher.port(production);
        for (String path : new String[] {"/", "/index.html", "/chat.js", "/page.css"}) {
            assertEquals(404, get(port, path).statusCode(), path);
        }
        assertEquals(401, get(port, "/v1/sessions/x").statusCode());
    }

    @Test
    void the_workers_serve_no_page() throws Exception {
        for (ConfigurableApplicationContext worker :
                new ConfigurableApplicationContext[] {settle.debounce, settle.agent}) {
            int port = SettleLauncher.port(worker);
            for (String path : new String[] {"/", "/index.html", "/chat.js"}) {
                assertEquals(404, get(port, path).statusCode(), path);
            }
        }
    }
}
