package dev.settle.ingest.http;

import org.junit.jupiter.api.Test;
import org.springframework.core.io.ClassPathResource;
import org.yaml.snakeyaml.Yaml;

import java.io.IOException;
import java.io.InputStream;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

/**
 * What client generators need from the API description, checked without the network (the build's Redocly lint
 * checks the same and more): every operation has an {@code operationId}, unique and camelCase, and at least one
 * 4xx response that is an RFC 9457 problem ({@code application/problem+json}).
 */
class OpenApiOperationsTest {
    private static final Set<String> METHODS = Set.of("get", "put", "post", "delete", "patch", "head", "options");

    @Test
    void every_operation_has_a_unique_camel_case_operation_id_and_a_4xx_problem_response() throws IOException {
        Map<String, Object> doc;
        try (InputStream in = new ClassPathResource(OpenApiController.RESOURCE).getInputStream()) {
            doc = new Yaml().load(in);
        }
        Map<String, Object> responses = map(map(doc.get("components")).get("responses"));
        Map<String, String> ids = new HashMap<>();
        List<String> problems = new ArrayList<>();
        map(doc.get("paths"))
                .forEach((path, item) -> map(item).forEach((method, value) -> {
                    if (!METHODS.contains(method)) {
                        return;
                    }
                    String operation = method.toUpperCase(java.util.Locale.ROOT) + " " + path;
                    Map<String, Object> op = map(value);
                    Object id = op.get("operationId");
                    if (!(id instanceof String s) || !s.matches("[a-z][A-Za-z0-9]*")) {
                        problems.add(operation + ": operationId " + id + " is not camelCase");
                    } else if (ids.put(s, operation) != null) {
                        problems.add(operation + ": operationId " + s + " also names " + ids.get(s));
                    }
                    boolean problem4xx = map(op.get("responses")).entrySet().stream()
                            .filter(r -> r.getKey().matches("4\\d\\d"))
                            .map(r -> resolve(map(r.getValue()), responses))
                            .anyMatch(r -> map(r.get("content")).containsKey("application/problem+json"));
                    if (!problem4xx) {
                        problems.add(operation + ": no 4xx application/problem+json response");
                    }
                }));
        assertFalse(ids.isEmpty());
        assertEquals(List.of(), problems);
    }

    private static Map<String, Object> resolve(Map<String, Object> response, Map<String, Object> components) {
        Object ref = response.get("$ref");
        return ref == null
                ? response
                : map(components.get(ref.toString().substring("#/components/responses/".length())));
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> map(Object value) {
        return value == null ? Map.of() : (Map<String, Object>) value;
    }
}
