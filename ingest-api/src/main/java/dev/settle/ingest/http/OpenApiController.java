package dev.settle.ingest.http;

import org.springframework.context.ApplicationContext;
import org.springframework.core.io.ClassPathResource;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.HashSet;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * The OpenAPI 3.1 description of this API, public (no key): {@code GET /v1/openapi.yaml}. A path item marked
 * {@code x-settle-optional: <room>} belongs to a part of the application that a deployment may leave out (the demo
 * ledger, {@code settle.demo.enabled}): it is listed only when its route is served. Every other path is always
 * listed.
 */
@RestController
@ApiAccess(Caller.Role.PUBLIC)
public class OpenApiController {
    public static final String PATH = "/v1/openapi.yaml";
    static final String RESOURCE = "openapi/settle-openapi.yaml";
    private static final Pattern PATH_ITEM = Pattern.compile("^ {2}(/\\S*):\\s*$");
    private static final Pattern OPTIONAL = Pattern.compile("^ {4}x-settle-optional:.*$");
    private final String spec;
    private final ApplicationContext context;
    private volatile byte[] served;

    public OpenApiController(ApplicationContext context) throws IOException {
        this.context = context;
        try (InputStream in = new ClassPathResource(RESOURCE).getInputStream()) {
            spec = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
    }

    @GetMapping(PATH)
    public ResponseEntity<byte[]> spec() {
        byte[] body = served;
        if (body == null) {
            Set<String> routes = new HashSet<>();
            context.getBean("requestMappingHandlerMapping", RequestMappingHandlerMapping.class)
                    .getHandlerMethods()
                    .keySet()
                    .forEach(info -> routes.addAll(info.getPatternValues()));
            body = withoutAbsentOptionalPaths(spec, routes).getBytes(StandardCharsets.UTF_8);
            served = body;
        }
        return ResponseEntity.ok()
                .contentType(MediaType.parseMediaType("application/yaml"))
                .body(body);
    }

    /** The spec without the path items marked {@code x-settle-optional} whose path is not among {@code routes}. */
    static String withoutAbsentOptionalPaths(String spec, Set<String> routes) {
        String[] lines = spec.split("\n", -1);
        StringBuilder out = new StringBuilder(spec.length());
        boolean inPaths = false;
        for (int i = 0; i < lines.length; i++) {
            String line = lines[i];
            if (!line.isEmpty() && !line.startsWith(" ")) {
                inPaths = line.startsWith("paths:");
            }
            var item = PATH_ITEM.matcher(line);
            if (inPaths && item.matches()) {
                int end = i + 1;
                boolean optional = false;
                while (end < lines.length && (lines[end].isEmpty() || lines[end].startsWith("   "))) {
                    optional |= OPTIONAL.matcher(lines[end]).matches();
                    end++;
                }
                if (optional && !routes.contains(item.group(1))) {
                    i = end - 1;
                    continue;
                }
            }
            out.append(line);
            if (i < lines.length - 1) {
                out.append('\n');
            }
        }
        return out.toString();
    }
}
