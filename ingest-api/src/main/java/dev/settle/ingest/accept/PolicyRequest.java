package dev.settle.ingest.accept;

import dev.settle.ingest.IngestSettings;
import dev.settle.ingest.http.ApiProblem;
import dev.settle.ingest.http.JsonBody;
import jakarta.servlet.http.HttpServletRequest;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;

/** A validated {@code PUT /v1/sessions/{id}} body: {@code {"policy": "merge"|"enqueue"|"reject"}}. */
final class PolicyRequest {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private PolicyRequest() {}

    static String read(HttpServletRequest request, IngestSettings settings) throws IOException {
        JsonNode root = JsonBody.read(request, settings.maxBodyBytes(), JSON);
        JsonNode policy = root == null ? null : root.get("policy");
        if (policy == null || !policy.isString() || !IngestSettings.POLICIES.contains(policy.asString())) {
            throw ApiProblem.badRequest("invalid-policy", "policy must be one of " + IngestSettings.POLICIES);
        }
        return policy.asString();
    }
}
