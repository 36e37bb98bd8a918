package dev.settle.agent.turn;

import org.springframework.dao.DataAccessException;
import org.springframework.transaction.TransactionException;

/**
 * Which failures of a turn are the database's (a connection lost mid-statement, a failover, a rollback that could not
 * be sent): expected now and then, so logged in one line, while anything else is logged with its stack.
 */
final class DatabaseErrors {
    private DatabaseErrors() {}

    static boolean isDatabase(Throwable e) {
        return e instanceof DataAccessException || e instanceof TransactionException;
    }
}
