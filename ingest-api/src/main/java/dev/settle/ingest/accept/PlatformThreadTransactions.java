package dev.settle.ingest.accept;

import org.springframework.transaction.support.TransactionCallback;
import org.springframework.transaction.support.TransactionTemplate;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

/**
 * An accept's transaction runs on a platform thread, not on its request's virtual thread: between two of its statements
 * a virtual thread whose answer has arrived waits for a carrier (as many as cores) behind every runnable request
 * handler, which are not preempted, and the session rows the transaction holds stay locked meanwhile; a platform thread
 * is woken by the operating system's scheduler, which does preempt. The request's thread waits for the result.
 */
final class PlatformThreadTransactions extends TransactionTemplate {
    private final ExecutorService threads = Executors.newCachedThreadPool(
            Thread.ofPlatform().name("ingest-tx-", 0).daemon(true).factory());

    PlatformThreadTransactions(TransactionTemplate template) {
        super(template.getTransactionManager(), template);
    }

    @Override
    public <T> T execute(TransactionCallback<T> action) {
        if (!Thread.currentThread().isVirtual()) {
            return super.execute(action);
        }
        Future<T> result = threads.submit(() -> super.execute(action));
        boolean interrupted = false;
        try {
            while (true) {
                try {
                    return result.get();
                } catch (InterruptedException e) {
                    interrupted = true; // the transaction runs to its end either way: wait for its outcome
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
}
