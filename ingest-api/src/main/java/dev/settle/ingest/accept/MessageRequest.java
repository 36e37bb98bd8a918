package dev.settle.ingest.accept;

import dev.settle.ingest.IngestSettings;
import dev.settle.ingest.http.ApiProblem;
import dev.settle.ingest.http.JsonBody;
import dev.settle.ingest.http.SessionId;
import dev.settle.ingest.http.Sha256;
import jakarta.servlet.http.HttpServletRequest;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.util.regex.Pattern;

/**
 * A validated {@code POST /v1/sessions/{id}/messages}: everything is checked before anything is written,
 * so a refused request changes nothing.
 */
public record MessageRequest(String sessionId, String text, String idempotencyKey, String bodySha256) {
    private static final Pattern IDEMPOTENCY_KEY = Pattern.compile("[\\x20-\\x7E]{1,255}");
    private static final JsonMapper JSON = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    public static MessageRequest read(String sessionId, HttpServletRequest request, IngestSettings settings)
            throws IOException {
        SessionId.check(sessionId);
        String key = request.getHeader("Idempotency-Key");
        if (key != null && !IDEMPOTENCY_KEY.matcher(key).matches()) {
            throw ApiProblem.badRequest(
                    "invalid-idempotency-key", "Idempotency-Key must be 1-255 printable ASCII characters");
        }
        String text = text(JsonBody.read(request, settings.maxBodyBytes(), JSON));
        if (text.codePointCount(0, text.length()) > settings.maxTextChars()) {
            throw ApiProblem.tooLarge(
                    "text-too-long", "text is longer than " + settings.maxTextChars() + " characters");
        }
        return new MessageRequest(sessionId, text, key, Sha256.hex(text));
    }

    private static String text(JsonNode root) {
        if (root == null || !root.isObject()) {
            throw ApiProblem.badRequest("malformed-json", "the body must be a JSON object like {\"text\": \"...\"}");
        }
        JsonNode text = root.get("text");
        if (text == null || text.isNull()) {
            throw ApiProblem.badRequest("missing-text", "text is required");
        }
        if (!text.isString()) {
            throw ApiProblem.badRequest("invalid-text", "text must be a string");
        }
        String value = text.asString();
        if (value.isBlank()) {
            throw ApiProblem.badRequest("blank-text", "text must not be blank");
        }
        for (int i = 0; i < value.length(); i++) {
            char c = value.charAt(i);
            if ((c < 0x20 && c != '\n' && c != '\r' && c != '\t') || c == 0x7F) {
                throw ApiProblem.badRequest("invalid-text", "text must not contain control characters");
            }
            if (Character.isSurrogate(c) && !validSurrogate(value, i)) {
                throw ApiProblem.badRequest("invalid-text", "text contains an unpaired surrogate");
            }
        }
        return value;
    }

    private static boolean validSurrogate(String s, int i) {
        char c = s.charAt(i);
        if (Character.isHighSurrogate(c)) {
            return i + 1 < s.length() && Character.isLowSurrogate(s.charAt(i + 1));
        }
        return i > 0 && Character.isHighSurrogate(s.charAt(i - 1));
    }
}
