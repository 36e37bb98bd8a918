package dev.settle.ingest.http;

import jakarta.servlet.http.HttpServletRequest;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import tools.jackson.core.JacksonException;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.CodingErrorAction;
import java.nio.charset.StandardCharsets;

/**
 * A JSON request body, checked in this order before any field is looked at: {@code Content-Type} is
 * {@code application/json} (or {@code +json}) in UTF-8 (else 415), the body is at most the size limit (else 413),
 * strict UTF-8 and valid JSON (else 400 {@code malformed-json}).
 */
public final class JsonBody {
    private JsonBody() {}

    /** The parsed body; {@code json} decides, e.g., whether a duplicate field is refused. */
    public static JsonNode read(HttpServletRequest request, int maxBytes, JsonMapper json) throws IOException {
        checkContentType(request.getContentType());
        byte[] body = readBody(request, maxBytes);
        checkUtf8(body);
        try {
            return json.readTree(body);
        } catch (JacksonException e) {
            throw ApiProblem.badRequest(
                    "malformed-json", "the body is not valid UTF-8 JSON: " + e.getOriginalMessage());
        }
    }

    /**
     * An optional JSON body: null when the request has none (whatever its {@code Content-Type}), else the parsed
     * body by the rules of {@link #read} (the size limit is checked first here, as the body is read to see whether
     * there is one).
     */
    public static JsonNode readOptional(HttpServletRequest request, int maxBytes, JsonMapper json) throws IOException {
        byte[] body = readBody(request, maxBytes);
        if (body.length == 0) {
            return null;
        }
        checkContentType(request.getContentType());
        checkUtf8(body);
        try {
            return json.readTree(body);
        } catch (JacksonException e) {
            throw ApiProblem.badRequest(
                    "malformed-json", "the body is not valid UTF-8 JSON: " + e.getOriginalMessage());
        }
    }

    static void checkContentType(String contentType) {
        MediaType type;
        try {
            type = contentType == null ? null : MediaType.parseMediaType(contentType);
        } catch (RuntimeException e) {
            type = null;
        }
        boolean json = type != null
                && ("application".equals(type.getType()))
                && ("json".equals(type.getSubtype()) || type.getSubtype().endsWith("+json"));
        if (!json) {
            throw new ApiProblem(
                    HttpStatus.UNSUPPORTED_MEDIA_TYPE,
                    "unsupported-media-type",
                    "Content-Type must be application/json");
        }
        if (type.getCharset() != null && !StandardCharsets.UTF_8.equals(type.getCharset())) {
            throw new ApiProblem(
                    HttpStatus.UNSUPPORTED_MEDIA_TYPE, "unsupported-media-type", "the body must be UTF-8 encoded");
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
            StandardCharsets.UTF_8
                    .newDecoder()
                    .onMalformedInput(CodingErrorAction.REPORT)
                    .onUnmappableCharacter(CodingErrorAction.REPORT)
                    .decode(ByteBuffer.wrap(body));
        } catch (CharacterCodingException e) {
            throw ApiProblem.badRequest("malformed-json", "the body is not valid UTF-8");
        }
    }
}
