package dev.settle.ingest;

import com.mysql.cj.Query;
import com.mysql.cj.protocol.Resultset;
import dev.settle.testsupport.WatchingInterceptor;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Holds the COMMITs of transactions that stored a user message (an accept's) while {@link #close closed}: each waits,
 * counted by {@link #waiting}, until {@link #open}. Installed like {@link StatementCounter} (its {@code PROPERTY}); one gate per
 * JVM, so a test closes and opens it around its own requests.
 */
public final class CommitGate extends WatchingInterceptor {
    private static volatile CountDownLatch gate = new CountDownLatch(0);
    private static final AtomicInteger WAITING = new AtomicInteger();

    /** Commits of request threads wait from now on. */
    public static void close() {
        gate = new CountDownLatch(1);
    }

    /** Lets every waiting commit (and every later one) through. */
    public static void open() {
        gate.countDown();
    }

    /** Commits waiting at the gate now. */
    public static int waiting() {
        return WAITING.get();
    }

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
        CountDownLatch g = gate;
        if (accept && g.getCount() > 0) {
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
