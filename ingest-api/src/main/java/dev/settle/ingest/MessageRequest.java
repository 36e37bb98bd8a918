package dev.settle.ingest;

import jakarta.servlet.http.HttpServletRequest;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import tools.jackson.core.JacksonException;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;
import java.util.regex.Pattern;

/**
 * A validated {@code POST /v1/sessions/{id}/messages}: everything is checked before anything is written,
 * so a refused request changes nothing.
 */
public record MessageRequest(String sessionId, String text, String idempotencyKey, String bodySha256) {
    private static final Pattern SESSION_ID = Pattern.compile("[A-Za-z0-9._:-]{1,128}");
    private static final Pattern IDEMPOTENCY_KEY = Pattern.compile("[\\x20-\\x7E]{1,255}");
    private static final JsonMapper JSON = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    public static String checkSessionId(String sessionId) {
        if (sessionId == null || !SESSION_ID.matcher(sessionId).matches()) {
            throw ApiProblem.badRequest("invalid-session-id",
                    "sessionId must be 1-128 characters of [A-Za-z0-9._:-]");
        }
        return sessionId;
    }

    public static MessageRequest read(String sessionId, HttpServletRequest request, IngestSettings settings)
            throws IOException {
        checkSessionId(sessionId);
        String key = request.getHeader("Idempotency-Key");
        if (key != null && !IDEMPOTENCY_KEY.matcher(key).matches()) {
            throw ApiProblem.badRequest("invalid-idempotency-key", "Idempotency-Key must be 1-255 printable ASCII characters");
        }
        checkContentType(request.getContentType());
        byte[] body = readBody(request, settings.maxBodyBytes());
        String text = parseText(body);
        if (text.codePointCount(0, text.length()) > settings.maxTextChars()) {
            throw ApiProblem.tooLarge("text-too-long", "text is longer than " + settings.maxTextChars() + " characters");
        }
        return new MessageRequest(sessionId, text, key, sha256(text));
    }

    static void checkContentType(String contentType) {
        MediaType type;
        try {
            type = contentType == null ? null : MediaType.parseMediaType(contentType);
        } catch (RuntimeException e) {
            type = null;
        }
        boolean json = type != null && ("application".equals(type.getType()))
                && ("json".equals(type.getSubtype()) || type.getSubtype().endsWith("+json"));
        if (!json) {
            throw new ApiProblem(HttpStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported-media-type",
                    "Content-Type must be application/json");
        }
        if (type.getCharset() != null && !StandardCharsets.UTF_8.equals(type.getCharset())) {
            throw new ApiProblem(HttpStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported-media-type",
                    "the body must be UTF-8 encoded");
        }
    }

    static byte[] readBody(HttpServletRequest request, int limit) throws IOException {
        long declared = request.getContentLengthLong();
        if (declared > limit) {
            throw ApiProblem.tooLarge("body-too-large", "request body is larger than " + limit + " bytes");
        }
        try (InputStream in = request.getInputStream()) {
            byte[] body = in.readNBytes(limit + 1);
            if (body.length > limit) {
                throw ApiProblem.tooLarge("body-too-large", "request body is larger than " + limit + " bytes");
            }
            return body;
        }
    }

    /**
     * Strict UTF-8 (Jackson's decoder accepts overlong forms such as C0 AF): the JDK decoder refuses overlong forms,
     * encoded surrogates and bytes that are never valid.
     */
    static void checkUtf8(byte[] body) {
        try {
            StandardCharsets.UTF_8.newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(body));
        } catch (CharacterCodingException e) {
            throw ApiProblem.badRequest("malformed-json", "the body is not valid UTF-8");
        }
    }

    private static String parseText(byte[] body) {
        checkUtf8(body);
        JsonNode root;
        try {
            root = JSON.readTree(body);
        } catch (JacksonException e) {
            throw ApiProblem.badRequest("malformed-json", "the body is not valid UTF-8 JSON: " + e.getOriginalMessage());
        }
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

    static String sha256(String text) {
        try {
            return HexFormat.of().formatHex(MessageDigest.getInstance("SHA-256")
                    .digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException(e);
        }
    }
}
