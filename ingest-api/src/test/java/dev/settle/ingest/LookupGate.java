package dev.settle.ingest;

import com.mysql.cj.Query;
import com.mysql.cj.protocol.Resultset;
import com.mysql.cj.protocol.ServerSession;
import dev.settle.testsupport.WatchingInterceptor;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Holds the results of API key lookups (the tenant of a key hash) while {@link #close closed}: the lookup has read
 * the key, and its request waits, counted by {@link #waiting}, until {@link #open}. Installed like
 * {@link StatementCounter} (its {@code PROPERTY}); one gate per JVM.
 */
public final class LookupGate extends WatchingInterceptor {
    private static volatile CountDownLatch gate = new CountDownLatch(0);
    private static final AtomicInteger WAITING = new AtomicInteger();

    /** Lookups that read a key from now on wait before their request goes on. */
    public static void close() {
        gate = new CountDownLatch(1);
    }

    /** Lets every waiting lookup (and every later one) through. */
    public static void open() {
        gate.countDown();
    }

    /** Lookups waiting at the gate now. */
    public static int waiting() {
        return WAITING.get();
    }

    @Override
    public <T extends Resultset> T postProcess(
            Supplier<String> sql, Query query, T originalResultSet, ServerSession serverSession) {
        String text = sqlText(sql, query);
        CountDownLatch g = gate;
        if (text != null && text.strip().startsWith("SELECT id, tenant_id FROM api_key") && g.getCount() > 0) {
            WAITING.incrementAndGet();
            try {
                g.await();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            } finally {
                WAITING.decrementAndGet();
            }
        }
        return null;
    }
}
