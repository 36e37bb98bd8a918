package dev.settle.e2e;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.BufferedReader;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.function.Predicate;

/** A minimal Server-Sent Events client over java.net.http: reads events until told to stop, then hangs up. */
final class SseClient {
    static final JsonMapper JSON = JsonMapper.builder().build();

    record Event(long id, String type, JsonNode data) {}

    private SseClient() {}

    /**
     * The text of the {@code reply.delta} events of a session's stream read in pieces (a disconnect and a
     * Last-Event-ID reconnect), after asserting every event came exactly once: ids without a gap or a repeat, no
     * delta seq twice.
     */
    static String deltasExactlyOnce(List<Event> all) {
        for (int i = 1; i < all.size(); i++) {
            org.junit.jupiter.api.Assertions.assertEquals(
                    all.get(i - 1).id() + 1, all.get(i).id(), "ids have no gap and no repeat");
        }
        StringBuilder deltas = new StringBuilder();
        java.util.Set<Integer> seqs = new java.util.HashSet<>();
        for (Event e : all) {
            if (e.type().equals("reply.delta")) {
                org.junit.jupiter.api.Assertions.assertTrue(
                        seqs.add(e.data().get("seq").asInt()),
                        "duplicate seq " + e.data().get("seq"));
                deltas.append(e.data().get("text").asString());
            }
        }
        return deltas.toString();
    }

    /** Reads events until {@code stop} accepts one (included), then closes the connection. */
    static List<Event> read(String url, String key, Long lastEventId, Predicate<Event> stop) throws Exception {
        return read(open(url, key, lastEventId), stop);
    }

    /** Opens a stream: returns once its 200 and headers came, before any event is read. */
    static HttpResponse<InputStream> open(String url, String key, Long lastEventId) throws Exception {
        HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(url))
                .header("Authorization", "Bearer " + key)
                .header("Accept", "text/event-stream")
                .GET();
        if (lastEventId != null) {
            request.header("Last-Event-ID", Long.toString(lastEventId));
        }
        HttpResponse<InputStream> response =
                HttpClient.newHttpClient().send(request.build(), HttpResponse.BodyHandlers.ofInputStream());
        if (response.statusCode() != 200) {
            throw new AssertionError("events answered " + response.statusCode());
        }
        return response;
    }

    /** Reads an open stream until {@code stop} accepts an event (included), then closes the connection. */
    static List<Event> read(HttpResponse<InputStream> response, Predicate<Event> stop) throws Exception {
        List<Event> events = new ArrayList<>();
        try (InputStream in = response.body();
                BufferedReader reader = new BufferedReader(new InputStreamReader(in, StandardCharsets.UTF_8))) {
            long id = -1;
            String type = null;
            String line;
            while ((line = reader.readLine()) != null) {
                if (line.startsWith("id: ")) {
                    id = Long.parseLong(line.substring(4));
                } else if (line.startsWith("event: ")) {
                    type = line.substring(7);
                } else if (line.startsWith("data: ") && type != null) {
                    Event event = new Event(id, type, JSON.readTree(line.substring(6)));
                    events.add(event);
                    type = null;
                    if (stop.test(event)) {
                        return events;
                    }
                }
            }
        }
        return events;
    }
}
