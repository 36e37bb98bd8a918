package dev.settle.ingest;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.net.URI;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.util.function.Function;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Every refused request gets its 4xx problem+json and leaves every table exactly as it was. */
class BadInputTest {
    static IngestApp app;
    static final String OK_PATH = "/v1/sessions/bad-input-session/messages";

    @BeforeAll
    static void start() {
        app = new IngestApp("badinput");
        assertEquals(202, app.post(OK_PATH, "application/json", "{\"text\":\"seed\"}").statusCode());
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    static Arguments bad(String name, int status, Function<IngestApp, HttpResponse<String>> request) {
        return Arguments.of(name, status, request);
    }

    static Stream<Arguments> cases() {
        String big = "x".repeat(16_001);
        return Stream.of(
                bad("malformed json", 400, a -> a.post(OK_PATH, "application/json", "{\"text\": ")),
                bad("not an object", 400, a -> a.post(OK_PATH, "application/json", "[\"text\"]")),
                bad("empty body", 400, a -> a.post(OK_PATH, "application/json", "")),
                bad("missing text", 400, a -> a.post(OK_PATH, "application/json", "{\"message\":\"hi\"}")),
                bad("null text", 400, a -> a.post(OK_PATH, "application/json", "{\"text\":null}")),
                bad("blank text", 400, a -> a.post(OK_PATH, "application/json", "{\"text\":\"  \\n\\t \"}")),
                bad("empty text", 400, a -> a.post(OK_PATH, "application/json", "{\"text\":\"\"}")),
                bad("number text", 400, a -> a.post(OK_PATH, "application/json", "{\"text\":42}")),
                bad("duplicate text field", 400, a -> a.post(OK_PATH, "application/json", "{\"text\":\"a\",\"text\":\"b\"}")),
                bad("control character", 400, a -> a.post(OK_PATH, "application/json", "{\"text\":\"a\\u0000b\"}")),
                bad("invalid utf-8", 400, a -> a.postBytes(OK_PATH, new byte[]{'{', '"', 't', 'e', 'x', 't', '"', ':', '"', (byte) 0xC3, (byte) 0x28, '"', '}'})),
                bad("bad session id chars", 400, a -> a.post("/v1/sessions/bad$id/messages", "application/json", "{\"text\":\"hi\"}")),
                bad("session id too long", 400, a -> a.post("/v1/sessions/" + "a".repeat(129) + "/messages", "application/json", "{\"text\":\"hi\"}")),
                bad("bad idempotency key", 400, a -> a.post(OK_PATH, "application/json", "{\"text\":\"hi\"}", "Idempotency-Key", "k".repeat(256))),
                bad("text too long", 413, a -> a.post(OK_PATH, "application/json", "{\"text\":\"" + big + "\"}")),
                bad("body over 64 KiB", 413, a -> a.post(OK_PATH, "application/json", "{\"text\":\"hi\",\"pad\":\"" + "p".repeat(70_000) + "\"}")),
                bad("text/plain", 415, a -> a.post(OK_PATH, "text/plain", "{\"text\":\"hi\"}")),
                bad("no content type", 415, a -> a.post(OK_PATH, null, "{\"text\":\"hi\"}")),
                bad("latin-1 charset", 415, a -> a.post(OK_PATH, "application/json; charset=ISO-8859-1", "{\"text\":\"hi\"}")),
                bad("missing key", 401, a -> a.send(HttpRequest.newBuilder(URI.create(a.base + OK_PATH))
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString("{\"text\":\"hi\"}")).build())),
                bad("wrong key", 401, a -> a.post(OK_PATH, "application/json", "{\"text\":\"hi\"}", "Authorization", "Bearer nope")),
                bad("basic auth", 401, a -> a.post(OK_PATH, "application/json", "{\"text\":\"hi\"}", "Authorization", "Basic dGVzdDp0ZXN0")),
                bad("wrong key on read", 401, a -> a.send(HttpRequest.newBuilder(URI.create(a.base + "/v1/sessions/bad-input-session"))
                        .header("Authorization", "Bearer nope").GET().build())),
                bad("wrong method", 405, a -> a.send(HttpRequest.newBuilder(URI.create(a.base + OK_PATH))
                        .header("Authorization", "Bearer " + IngestApp.KEY)
                        .DELETE().build())));
    }

    @ParameterizedTest(name = "{0} -> {1}")
    @MethodSource("cases")
    void refused_with_problem_json_and_nothing_changes(String name, int status,
                                                       Function<IngestApp, HttpResponse<String>> request) {
        String before = app.fingerprint();
        HttpResponse<String> response = request.apply(app);
        assertEquals(status, response.statusCode(), name + ": " + response.body());
        assertEquals("application/problem+json", response.headers().firstValue("Content-Type").orElse("")
                .split(";")[0], name);
        assertTrue(response.body().contains("\"status\":" + status), response.body());
        assertEquals(before, app.fingerprint(), name + " changed the database");
        assertTrue(new String(response.body().getBytes(StandardCharsets.UTF_8), StandardCharsets.UTF_8).contains("detail"));
    }
}
