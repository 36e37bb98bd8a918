package dev.settle.ingest.views;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.json.JsonMapper;

/** Shows stored JSON text as JSON when it parses, as the plain string otherwise. */
final class JsonText {
    private static final JsonMapper JSON = JsonMapper.builder().build();

    private JsonText() {}

    static Object parseOrString(String text) {
        if (text == null) {
            return null;
        }
        try {
            return JSON.readTree(text);
        } catch (JacksonException e) {
            return text;
        }
    }
}
