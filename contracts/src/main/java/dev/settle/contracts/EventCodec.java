package dev.settle.contracts;

import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.json.JsonMapper;

/**
 * JSON encoding of the Kafka event contracts; the wire format is plain JSON strings, keyed by session id. A field
 * this version does not know is ignored, so a producer may add one before its consumers are upgraded.
 */
public final class EventCodec {
    private static final JsonMapper JSON = JsonMapper.builder()
            .disable(DeserializationFeature.FAIL_ON_UNKNOWN_PROPERTIES)
            .build();

    private EventCodec() {}

    public static String encode(Object event) {
        return JSON.writeValueAsString(event);
    }

    public static <T> T decode(String json, Class<T> type) {
        return JSON.readValue(json, type);
    }
}
