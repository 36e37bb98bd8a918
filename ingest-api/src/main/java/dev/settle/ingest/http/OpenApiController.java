package dev.settle.ingest.http;

import org.springframework.core.io.ClassPathResource;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.RestController;

import java.io.IOException;
import java.io.InputStream;

/** The OpenAPI 3.1 description of this API, public (no key): {@code GET /v1/openapi.yaml}. */
@RestController
@ApiAccess(Caller.Role.PUBLIC)
public class OpenApiController {
    public static final String PATH = "/v1/openapi.yaml";
    static final String RESOURCE = "openapi/settle-openapi.yaml";
    private final byte[] spec;

    public OpenApiController() throws IOException {
        try (InputStream in = new ClassPathResource(RESOURCE).getInputStream()) {
            spec = in.readAllBytes();
        }
    }

    @GetMapping(PATH)
    public ResponseEntity<byte[]> spec() {
        return ResponseEntity.ok().contentType(MediaType.parseMediaType("application/yaml")).body(spec);
    }
}
