package dev.settle.ingest;

import org.junit.jupiter.api.BeforeAll;

import java.util.Map;

/** {@link MessageIngestTest} with group commit on: the same promises, batched. */
class GroupCommitMessageIngestTest extends MessageIngestTest {
    @BeforeAll
    static void start() {
        app = new IngestApp("ingest_gc", Map.of("settle.ingest.group-commit", "true"));
    }
}
