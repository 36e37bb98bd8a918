package dev.settle.ingest.tenancy;

import dev.settle.ingest.IngestSettings;
import dev.settle.ingest.http.ApiAccess;
import dev.settle.ingest.http.ApiProblem;
import dev.settle.ingest.http.Caller;
import jakarta.servlet.http.HttpServletRequest;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.DeleteMapping;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PatchMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;

import java.io.IOException;
import java.util.Map;

/**
 * The admin API ({@code /v1/admin/tenants}), behind {@code SETTLE_ADMIN_KEY}: tenants, their
 * settings and their API keys. A key is shown once, in the answer that issued it.
 */
@RestController
@ApiAccess(Caller.Role.ADMIN)
@RequestMapping("/v1/admin/tenants")
public class AdminController {
    private final Tenants tenants;
    private final IngestSettings settings;
    private final ApiKeys keys;

    public AdminController(Tenants tenants, ApiKeys keys, IngestSettings settings) {
        this.tenants = tenants;
        this.keys = keys;
        this.settings = settings;
    }

    @PostMapping
    public ResponseEntity<Map<String, Object>> create(HttpServletRequest request) throws IOException {
        return ResponseEntity.status(HttpStatus.CREATED).body(tenants.create(TenantRequest.read(request, settings)));
    }

    @GetMapping
    public Map<String, Object> list() {
        return Map.of("tenants", tenants.all());
    }

    @GetMapping("/{tenantId}")
    public Map<String, Object> one(@PathVariable String tenantId) {
        return tenants.one(TenantRequest.checkTenantId(tenantId));
    }

    @PatchMapping("/{tenantId}")
    public Map<String, Object> update(@PathVariable String tenantId, HttpServletRequest request) throws IOException {
        TenantRequest.checkTenantId(tenantId);
        return tenants.update(tenantId, TenantRequest.read(request, settings));
    }

    @GetMapping("/{tenantId}/keys")
    public Map<String, Object> keys(@PathVariable String tenantId) {
        tenants.one(TenantRequest.checkTenantId(tenantId));
        return Map.of("keys", keys.list(tenantId));
    }

    /** A further key (rotation): the old ones stay valid until revoked. */
    @PostMapping("/{tenantId}/keys")
    public ResponseEntity<Map<String, Object>> newKey(@PathVariable String tenantId) {
        ApiKeys.Issued key = tenants.newKey(TenantRequest.checkTenantId(tenantId));
        return ResponseEntity.status(HttpStatus.CREATED).body(key.body());
    }

    /** Revokes a key at once: its next request gets 401. */
    @DeleteMapping("/{tenantId}/keys/{keyId}")
    public ResponseEntity<Void> revoke(@PathVariable String tenantId, @PathVariable String keyId) {
        long id;
        try {
            id = Long.parseLong(keyId);
        } catch (NumberFormatException e) {
            throw ApiProblem.badRequest("invalid-key-id", "a key id is an integer, as listed by GET .../keys");
        }
        tenants.revokeKey(TenantRequest.checkTenantId(tenantId), id);
        return ResponseEntity.noContent().build();
    }
}
