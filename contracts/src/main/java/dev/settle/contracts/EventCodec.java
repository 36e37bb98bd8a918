package dev.settle.contracts;

import tools.jackson.databind.json.JsonMapper;

/** JSON encoding of the Kafka event contracts; the wire format is plain JSON strings, keyed by session id. */
public final class EventCodec {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private EventCodec() {}

    public static String encode(Object event) {
        return JSON.writeValueAsString(event);
    }

    public static <T> T decode(String json, Class<T> type) {
        return JSON.readValue(json, type);
    }
}
