package dev.settle.e2e;

import tools.jackson.databind.json.JsonMapper;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.Map;

/** ingest-api's POSTs as a client sends them, over HTTP with an API key: a message, or an empty body to a path. */
final class HttpApi implements ChaosWorkload.Api {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private final HttpClient http = HttpClient.newHttpClient();
    private final String base;
    private final String key;

    /** @param base ingest-api's address, {@code http://host:port} */
    HttpApi(String base, String key) {
        this.base = base;
        this.key = key;
    }

    @Override
    public ChaosWorkload.ApiResult post(String sessionId, String text, String idempotencyKey) {
        HttpRequest.Builder b = HttpRequest.newBuilder(URI.create(base + "/v1/sessions/" + sessionId + "/messages"))
                .header("Authorization", "Bearer " + key)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(Map.of("text", text))));
        if (idempotencyKey != null) {
            b.header("Idempotency-Key", idempotencyKey);
        }
        HttpResponse<String> r = send(b.build());
        return new ChaosWorkload.ApiResult(
                r.statusCode(), r.body(), r.statusCode() == 202 ? JSON.readTree(r.body()) : null);
    }

    @Override
    public int postPath(String path) {
        return send(HttpRequest.newBuilder(URI.create(base + path))
                        .header("Authorization", "Bearer " + key)
                        .POST(HttpRequest.BodyPublishers.noBody())
                        .build())
                .statusCode();
    }

    private HttpResponse<String> send(HttpRequest request) {
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }
}
