package dev.settle.ingest;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** {@link MessageIngestTest} with group commit on: the same promises, batched, and no batch falls back. */
class GroupCommitMessageIngestTest extends MessageIngestTest {
    @BeforeAll
    static void start() {
        app = new IngestApp("ingest_gc", Map.of("settle.ingest.group-commit", "true"));
    }

    /** No batch failed (a failed batch is accepted message by message, which would hide a wrong decision). */
    @AfterEach
    void no_batch_failed() {
        assertEquals(0.0, app.failedBatches());
    }
}
