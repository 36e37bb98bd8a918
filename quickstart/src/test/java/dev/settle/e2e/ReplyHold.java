package dev.settle.e2e;

import com.mysql.cj.Query;
import com.mysql.cj.protocol.Resultset;
import com.mysql.cj.protocol.ServerSession;
import dev.settle.testsupport.Gate;
import dev.settle.testsupport.WatchingInterceptor;

import java.util.function.Supplier;

/**
 * Holds a reply's commit at {@link #GATE}, while it is closed, right after its version check (the
 * {@code ReplyCommit.ADVANCE} UPDATE, which keeps the session row locked until the commit). Installed on every
 * application's pool by {@link #PROPERTY}; one gate per JVM.
 */
public final class ReplyHold extends WatchingInterceptor {
    public static final Gate GATE = new Gate();

    @Override
    public <T extends Resultset> T postProcess(
            Supplier<String> sql, Query query, T originalResultSet, ServerSession serverSession) {
        String text = sqlText(sql, query);
        // the statement as sent, its values inlined (Connector/J's client-side prepare)
        if (text != null
                && text.strip().startsWith("UPDATE chat_session s")
                && text.contains("SET s.replied_version =")) {
            GATE.pass();
        }
        return null;
    }
}
