package dev.settle.ingest;

import dev.settle.embedded.AppLauncher;
import dev.settle.testsupport.SharedInfra;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.Map;

/** The ingest API started for real on a fresh database of the shared MariaDB and the shared broker. */
public final class IngestApp implements AutoCloseable {
    public static final String KEY = "test-key";
    public static final String ADMIN_KEY = "test-admin-key";
    public final ConfigurableApplicationContext context;
    public final String base;
    /** Actuator's base URL (the management port). */
    public final String management;

    public final JdbcTemplate jdbc;
    public final HttpClient http =
            HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(5)).build();

    public IngestApp(String hint) {
        this(hint, Map.of());
    }

    /** @param extra further properties, e.g. limits */
    public IngestApp(String hint, Map<String, Object> extra) {
        this(SharedInfra.newDatabase(hint), SharedInfra.kafkaBootstrap(), extra);
    }

    /** On any database and broker (compatibility runs). */
    public IngestApp(String jdbcUrl, String kafkaBootstrap, Map<String, Object> extra) {
        Map<String, Object> props = new HashMap<>(Map.of(
                "server.port", "0",
                "management.server.port", "0",
                "settle.api-key", KEY,
                "settle.admin-key", ADMIN_KEY,
                "spring.datasource.url", jdbcUrl,
                "spring.kafka.bootstrap-servers", kafkaBootstrap));
        // one message per transaction unless a test asks for group commit (the GroupCommit* variants of the promise
        // tests), whatever the default, so that both modes stay tried
        props.put("settle.ingest.group-commit", "false");
        props.putAll(extra);
        context = AppLauncher.run(IngestApiApplication.class, IngestApiApplication.defaultProperties(), props);
        base = "http://127.0.0.1:" + AppLauncher.port(context);
        management = "http://127.0.0.1:" + AppLauncher.managementPort(context);
        jdbc = context.getBean(JdbcTemplate.class);
    }

    public HttpResponse<String> post(String path, String contentType, String body, String... headers) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path))
                .POST(HttpRequest.BodyPublishers.ofString(body == null ? "" : body));
        if (contentType != null) {
            b.header("Content-Type", contentType);
        }
        b.header("Authorization", "Bearer " + KEY);
        for (int i = 0; i < headers.length; i += 2) {
            b.setHeader(headers[i], headers[i + 1]);
        }
        return send(b.build());
    }

    public HttpResponse<String> postBytes(String path, byte[] body) {
        return send(HttpRequest.newBuilder(URI.create(base + path))
                .header("Content-Type", "application/json")
                .header("Authorization", "Bearer " + KEY)
                .POST(HttpRequest.BodyPublishers.ofByteArray(body))
                .build());
    }

    public HttpResponse<String> get(String path) {
        return get(path, KEY);
    }

    public HttpResponse<String> get(String path, String key) {
        return send(HttpRequest.newBuilder(URI.create(base + path))
                .header("Authorization", "Bearer " + key)
                .GET()
                .build());
    }

    /** A JSON request with any method and bearer key (null body = none). */
    public HttpResponse<String> call(String method, String path, String key, String json) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + path))
                .method(
                        method,
                        json == null ? HttpRequest.BodyPublishers.noBody() : HttpRequest.BodyPublishers.ofString(json));
        if (json != null) {
            b.header("Content-Type", "application/json");
        }
        if (key != null) {
            b.header("Authorization", "Bearer " + key);
        }
        return send(b.build());
    }

    public HttpResponse<String> send(HttpRequest request) {
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    /** Rows of every Settle table, to prove that a refused request changed nothing. */
    public String fingerprint() {
        StringBuilder sb = new StringBuilder();
        for (String table : new String[] {
            "chat_session",
            "chat_message",
            "chat_turn",
            "debounce_timer",
            "webhook_delivery",
            "tool_execution",
            "ledger_entry",
            "session_event",
            "tenant",
            "api_key",
            "webhook_attempt",
            "webhook_endpoint",
            "session_burst"
        }) {
            sb.append(table)
                    .append('=')
                    .append(jdbc.queryForList("SELECT * FROM " + table + " ORDER BY 1"))
                    .append('\n');
        }
        return sb.toString();
    }

    @Override
    public void close() {
        context.close();
    }

    /**
     * Group-commit batches that failed and were accepted again message by message (a fallback that would hide a wrong
     * batch decision behind correct answers).
     */
    public double failedBatches() {
        return context.getBean(io.micrometer.core.instrument.MeterRegistry.class)
                .get("settle.accept.batch.failures")
                .counter()
                .count();
    }
}
