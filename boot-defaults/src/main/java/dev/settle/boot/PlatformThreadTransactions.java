package dev.settle.boot;

import org.slf4j.MDC;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionCallback;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.SynchronousQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * A transaction begun on a virtual thread runs on a platform thread, and the virtual thread waits for its outcome:
 * between two statements a virtual thread whose answer has arrived waits for a carrier (as many as cores) behind every
 * runnable virtual thread of its JVM, which are not preempted, and the rows its transaction locked stay locked
 * meanwhile (thread dumps of the chaos overload run, docs/RELIABILITY.md); a platform thread is woken by the operating
 * system's scheduler, which preempts. Used by the accept (ingest-api), where it was measured to help; the agent's
 * transactions were measured handed over too and are not (docs/RELIABILITY.md, overload runs of 2026-12-06 night).
 *
 * <ul>
 *   <li>A caller on a platform thread, or already inside a transaction (its connection is bound to its thread), runs
 *       the callback where it is.</li>
 *   <li>The transaction runs to its end, its outcome or failure reaches the caller unchanged; an interrupt of the
 *       waiting caller is passed on to the transaction's thread, as if it ran there.</li>
 *   <li>The caller's logging context (MDC) goes with the callback.</li>
 * </ul>
 * The threads are shared by the JVM's templates, at most {@value #MAX_THREADS}, idle ones end after a minute: the
 * connection pools bound the database work, and a transaction that finds every thread busy runs on its caller's thread,
 * as it would without this class, rather than queue without the pool's connection timeout.
 */
public class PlatformThreadTransactions extends TransactionTemplate {
    /** Far above any pool's connections: a transaction beyond them would only wait for one. */
    static final int MAX_THREADS = 256;

    private static final ExecutorService SHARED = threads(MAX_THREADS);

    private final ExecutorService threads;

    public PlatformThreadTransactions(PlatformTransactionManager transactionManager) {
        this(transactionManager, SHARED);
    }

    PlatformThreadTransactions(PlatformTransactionManager transactionManager, ExecutorService threads) {
        super(transactionManager);
        this.threads = threads;
    }

    private PlatformThreadTransactions(TransactionTemplate template) {
        super(template.getTransactionManager(), template);
        this.threads = SHARED;
    }

    /** Up to {@code max} threads, none idle for more than a minute; a task beyond them is refused, not queued. */
    static ExecutorService threads(int max) {
        return new ThreadPoolExecutor(
                0,
                max,
                60,
                TimeUnit.SECONDS,
                new SynchronousQueue<>(),
                Thread.ofPlatform().name("settle-tx-", 0).daemon(true).factory());
    }

    /** {@code template} itself when it already hands its transactions over, else one that does, with its settings. */
    public static TransactionTemplate of(TransactionTemplate template) {
        return template instanceof PlatformThreadTransactions ? template : new PlatformThreadTransactions(template);
    }

    @Override
    public <T> T execute(TransactionCallback<T> action) {
        if (!Thread.currentThread().isVirtual() || TransactionSynchronizationManager.isActualTransactionActive()) {
            return super.execute(action);
        }
        Map<String, String> context = MDC.getCopyOfContextMap();
        Runner runner = new Runner();
        Future<T> result;
        try {
            result = threads.submit(() -> {
                runner.start();
                if (context != null) {
                    MDC.setContextMap(context);
                }
                try {
                    return super.execute(action);
                } finally {
                    MDC.clear();
                    runner.end();
                }
            });
        } catch (RejectedExecutionException full) {
            return super.execute(action); // every thread busy: on the caller's, as without this class
        }
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return result.get();
                } catch (InterruptedException e) {
                    interrupted = true;
                    runner.interrupt();
                } catch (ExecutionException e) {
                    if (e.getCause() instanceof RuntimeException r) {
                        throw r;
                    }
                    if (e.getCause() instanceof Error err) {
                        throw err;
                    }
                    throw new IllegalStateException(e.getCause());
                }
            }
        } finally {
            if (interrupted) {
                Thread.currentThread().interrupt();
            }
        }
    }

    /** The thread a handed-over transaction runs on, while it runs; an interrupt of its caller goes to it. */
    private static final class Runner {
        private Thread thread;
        private boolean interrupted;

        synchronized void start() {
            thread = Thread.currentThread();
            if (interrupted) {
                thread.interrupt();
            }
        }

        synchronized void end() {
            thread = null;
            Thread.interrupted(); // an interrupt meant for this transaction ends with it
        }

        synchronized void interrupt() {
            interrupted = true;
            if (thread != null) {
                thread.interrupt();
            }
        }
    }
}
