package dev.settle.ingest;

import org.junit.jupiter.api.BeforeAll;

import java.util.Map;

/** {@link TenantTest} with group commit on: tenants' sessions and their default policy (reject), batched. */
class GroupCommitTenantTest extends TenantTest {
    @BeforeAll
    static void start() {
        app = new IngestApp("tenants_gc", Map.of("settle.ingest.group-commit", "true"));
    }
}
