package dev.settle.ingest.accept;

import dev.settle.ingest.IngestSettings;
import dev.settle.ingest.http.ApiProblem;
import dev.settle.ingest.http.JsonBody;
import dev.settle.ingest.http.SessionId;
import jakarta.servlet.http.HttpServletRequest;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;

/**
 * A valid {@code POST /v1/sessions/{id}/typing}: the session id of the messages route, and no body or a JSON object
 * (its fields are ignored). A body that is there follows the JSON rules of every route (415, 413, 400
 * {@code malformed-json}); one that is not an object is a 400 {@code malformed-json} too.
 */
final class TypingRequest {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private TypingRequest() {}

    static void check(String sessionId, HttpServletRequest request, IngestSettings settings) throws IOException {
        SessionId.check(sessionId);
        JsonNode body = JsonBody.readOptional(request, settings.maxBodyBytes(), JSON);
        if (body != null && !body.isObject()) {
            throw ApiProblem.badRequest("malformed-json", "the body must be empty or a JSON object");
        }
    }
}
