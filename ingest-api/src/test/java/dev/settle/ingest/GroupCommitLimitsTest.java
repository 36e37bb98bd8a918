package dev.settle.ingest;

import org.junit.jupiter.api.BeforeAll;

import java.util.Map;

/** {@link LimitsTest} with group commit on: the max-unanswered limit stays exact. */
class GroupCommitLimitsTest extends LimitsTest {
    @BeforeAll
    static void start() {
        app = new IngestApp(
                "limits_gc",
                Map.of(
                        "settle.limits.rate",
                        "0.001",
                        "settle.limits.burst",
                        "150",
                        "settle.limits.unanswered-retry-after",
                        "7s",
                        "settle.ingest.group-commit",
                        "true"));
    }
}
