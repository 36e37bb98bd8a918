package dev.settle.e2e;

import tools.jackson.databind.JsonNode;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/** Settle's public HTTP API as a client sees it, for a system the test does not hold in its own JVM. */
final class ApiClient {
    private final String base;
    private final String key;
    private final HttpClient http = HttpClient.newHttpClient();

    ApiClient(String base, String key) {
        this.base = base;
        this.key = key;
    }

    /** POSTs a message and returns the 202's body; any other status fails the test. */
    JsonNode post(String sessionId, String text) {
        HttpResponse<String> r = send(HttpRequest.newBuilder(
                        URI.create(base + "/v1/sessions/" + sessionId + "/messages"))
                .header("Authorization", "Bearer " + key)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(SettleSystem.JSON.writeValueAsString(Map.of("text", text))))
                .build());
        if (r.statusCode() != 202) {
            throw new AssertionError("POST answered " + r.statusCode() + ": " + r.body());
        }
        return SettleSystem.JSON.readTree(r.body());
    }

    JsonNode session(String sessionId) {
        return get("/v1/sessions/" + sessionId);
    }

    List<JsonNode> messages(String sessionId) {
        List<JsonNode> messages = new ArrayList<>();
        get("/v1/sessions/" + sessionId + "/messages").get("messages").forEach(messages::add);
        return messages;
    }

    List<JsonNode> messages(String sessionId, String role) {
        return messages(sessionId).stream()
                .filter(m -> role.equals(m.get("role").asString()))
                .toList();
    }

    private JsonNode get(String path) {
        HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(base + path))
                .header("Authorization", "Bearer " + key)
                .GET()
                .build());
        if (r.statusCode() != 200) {
            throw new AssertionError("GET " + path + " answered " + r.statusCode() + ": " + r.body());
        }
        return SettleSystem.JSON.readTree(r.body());
    }

    /** GETs any URL (a worker's actuator, say) and returns the 200's body. */
    String raw(String url) {
        HttpResponse<String> r =
                send(HttpRequest.newBuilder(URI.create(url)).GET().build());
        if (r.statusCode() != 200) {
            throw new AssertionError("GET " + url + " answered " + r.statusCode() + ": " + r.body());
        }
        return r.body();
    }

    /** The status of an anonymous GET of any URL. */
    int status(String url) {
        return send(HttpRequest.newBuilder(URI.create(url)).GET().build()).statusCode();
    }

    private HttpResponse<String> send(HttpRequest request) {
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (Exception e) {
            throw new IllegalStateException(request.method() + " " + request.uri() + " failed", e);
        }
    }
}
