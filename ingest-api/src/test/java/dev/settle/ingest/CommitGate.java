package dev.settle.ingest;

import com.mysql.cj.Query;
import com.mysql.cj.protocol.Resultset;
import dev.settle.testsupport.Gate;
import dev.settle.testsupport.WatchingInterceptor;

import java.util.function.Supplier;

/**
 * Holds the COMMITs of transactions that stored a user message (an accept's) at {@link #GATE} while it is closed.
 * Installed like {@link StatementCounter} (its {@code PROPERTY}); one gate per JVM, so a test closes and opens it
 * around its own requests.
 */
public final class CommitGate extends WatchingInterceptor {
    public static final Gate GATE = new Gate();

    /** This connection (one interceptor per connection) stored a message since its last commit. */
    private boolean storedMessage;

    @Override
    public <T extends Resultset> T preProcess(Supplier<String> sql, Query query) {
        String text = sqlText(sql, query);
        if (text == null) {
            return null;
        }
        if (text.strip().startsWith("INSERT INTO chat_message")) {
            storedMessage = true;
            return null;
        }
        if (!"commit".equalsIgnoreCase(text) && !"rollback".equalsIgnoreCase(text)) {
            return null;
        }
        boolean accept = storedMessage && "commit".equalsIgnoreCase(text);
        storedMessage = false;
        if (accept) {
            GATE.pass();
        }
        return null;
    }
}
