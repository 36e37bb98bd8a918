package dev.settle.agent.tools;

import tools.jackson.core.JacksonException;
import tools.jackson.databind.DeserializationFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.math.BigDecimal;
import java.util.Map;
import java.util.TreeMap;

/**
 * The canonical form of a tool call's arguments, so that the same intended call always gets the same
 * idempotency key: object keys sorted at every depth, whitespace dropped, every number written in one form
 * ({@code 35}, {@code 35.0} and {@code 3.5e1} are all {@code 35}; {@code 350} is {@code 3.5E+2}: unique,
 * and never expanded, so a huge exponent stays short).
 */
final class CanonicalJson {
    private static final JsonMapper JSON = JsonMapper.builder()
            .enable(DeserializationFeature.USE_BIG_DECIMAL_FOR_FLOATS)
            .enable(DeserializationFeature.USE_BIG_INTEGER_FOR_INTS)
            .build();

    private CanonicalJson() {}

    /** @throws IllegalArgumentException when {@code json} is not valid JSON */
    public static String of(String json) {
        JsonNode node;
        try {
            node = JSON.readTree(json == null || json.isBlank() ? "{}" : json);
        } catch (JacksonException e) {
            throw new IllegalArgumentException("arguments are not valid JSON: " + e.getOriginalMessage());
        }
        StringBuilder out = new StringBuilder();
        write(node, out);
        return out.toString();
    }

    private static void write(JsonNode node, StringBuilder out) {
        if (node.isObject()) {
            Map<String, JsonNode> sorted = new TreeMap<>();
            node.properties().forEach(e -> sorted.put(e.getKey(), e.getValue()));
            out.append('{');
            boolean first = true;
            for (Map.Entry<String, JsonNode> e : sorted.entrySet()) {
                if (!first) {
                    out.append(',');
                }
                first = false;
                out.append(JSON.writeValueAsString(e.getKey())).append(':');
                write(e.getValue(), out);
            }
            out.append('}');
        } else if (node.isArray()) {
            out.append('[');
            for (int i = 0; i < node.size(); i++) {
                if (i > 0) {
                    out.append(',');
                }
                write(node.get(i), out);
            }
            out.append(']');
        } else if (node.isNumber()) {
            BigDecimal value = node.decimalValue().stripTrailingZeros();
            out.append(value.signum() == 0 ? "0" : value.toString());
        } else {
            out.append(JSON.writeValueAsString(node));
        }
    }
}
