package dev.settle.ingest;

import org.junit.jupiter.api.BeforeAll;

import java.util.Map;

/** {@link IdempotencyRetentionTest} with group commit on. */
class GroupCommitIdempotencyRetentionTest extends IdempotencyRetentionTest {
    @BeforeAll
    static void start() {
        app = new IngestApp("idem_retention_gc", Map.of("settle.ingest.group-commit", "true"));
    }
}
