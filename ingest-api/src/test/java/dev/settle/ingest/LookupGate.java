package dev.settle.ingest;

import com.mysql.cj.Query;
import com.mysql.cj.protocol.Resultset;
import com.mysql.cj.protocol.ServerSession;
import dev.settle.testsupport.Gate;
import dev.settle.testsupport.WatchingInterceptor;

import java.util.function.Supplier;

/**
 * Holds the results of API key lookups (the tenant of a key hash) at {@link #GATE} while it is closed: the lookup has
 * read the key, and its request waits. Installed like {@link StatementCounter} (its {@code PROPERTY}); one gate per
 * JVM.
 */
public final class LookupGate extends WatchingInterceptor {
    public static final Gate GATE = new Gate();

    @Override
    public <T extends Resultset> T postProcess(
            Supplier<String> sql, Query query, T originalResultSet, ServerSession serverSession) {
        String text = sqlText(sql, query);
        if (text != null && text.strip().startsWith("SELECT id, tenant_id FROM api_key")) {
            GATE.pass();
        }
        return null;
    }
}
