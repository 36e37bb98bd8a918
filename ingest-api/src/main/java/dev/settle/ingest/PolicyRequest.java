package dev.settle.ingest;

import jakarta.servlet.http.HttpServletRequest;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;

/** A validated {@code PUT /v1/sessions/{id}} body: {@code {"policy": "merge"|"enqueue"|"reject"}}. */
final class PolicyRequest {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private PolicyRequest() {
    }

    static String read(HttpServletRequest request, IngestSettings settings) throws IOException {
        MessageRequest.checkContentType(request.getContentType());
        byte[] body = MessageRequest.readBody(request, settings.maxBodyBytes());
        MessageRequest.checkUtf8(body);
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (JacksonException e) {
            throw ApiProblem.badRequest("malformed-json", "the body is not valid JSON: " + e.getOriginalMessage());
        }
        JsonNode policy = root == null ? null : root.get("policy");
        if (policy == null || !policy.isString() || !IngestSettings.POLICIES.contains(policy.asString())) {
            throw ApiProblem.badRequest("invalid-policy", "policy must be one of " + IngestSettings.POLICIES);
        }
        return policy.asString();
    }
}
