package dev.settle.debounce;

import dev.settle.testsupport.LocalMariaDb;

/** The debounce contract on the MariaDB 10.11 of the service machines, when it answers; skipped with the reason otherwise. */
class LocalMariaDb1011DebounceContractTest extends DebounceContract {
    @Override
    String[] database() {
        return new String[] {
            LocalMariaDb.newDatabaseOrSkip("LocalMariaDb1011DebounceContractTest", "settle_debounce_"),
            LocalMariaDb.USER,
            LocalMariaDb.PASSWORD
        };
    }
}
