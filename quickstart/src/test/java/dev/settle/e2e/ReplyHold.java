package dev.settle.e2e;

import com.mysql.cj.Query;
import com.mysql.cj.protocol.Resultset;
import com.mysql.cj.protocol.ServerSession;
import dev.settle.testsupport.WatchingInterceptor;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Holds a reply's commit right after its version check (the {@code ReplyCommit.ADVANCE} UPDATE, which keeps the
 * session row locked until the commit) while {@link #close closed}: the reply's transaction waits there, counted by
 * {@link #waiting}, until {@link #open}. Installed on every application's pool by {@link #PROPERTY}; one hold per JVM.
 */
public final class ReplyHold extends WatchingInterceptor {
    public static final String PROPERTY = "spring.datasource.hikari.data-source-properties.queryInterceptors";

    private static volatile CountDownLatch hold = new CountDownLatch(0);
    private static final AtomicInteger WAITING = new AtomicInteger();

    /** Replies that pass their version check from now on wait. */
    public static void close() {
        hold = new CountDownLatch(1);
    }

    /** Lets every waiting reply (and every later one) go on. */
    public static void open() {
        hold.countDown();
    }

    /** Replies waiting now. */
    public static int waiting() {
        return WAITING.get();
    }

    @Override
    public <T extends Resultset> T postProcess(
            Supplier<String> sql, Query query, T originalResultSet, ServerSession serverSession) {
        String text = sqlText(sql, query);
        CountDownLatch h = hold;
        if (text != null
                && text.strip().startsWith("UPDATE chat_session s")
                && text.contains("SET s.replied_version =")
                && h.getCount() > 0) {
            WAITING.incrementAndGet();
            try {
                h.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                WAITING.decrementAndGet();
            }
        }
        return null;
    }
}
