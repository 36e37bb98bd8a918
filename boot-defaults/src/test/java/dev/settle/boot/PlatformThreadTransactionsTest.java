package dev.settle.boot;

import org.junit.jupiter.api.Test;
import org.slf4j.MDC;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.SimpleTransactionStatus;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Where a transaction runs, and what its caller sees, for callers on virtual and platform threads. */
class PlatformThreadTransactionsTest {
    /** Counts commits and rollbacks, holds no resource. */
    static final class Outcomes implements PlatformTransactionManager {
        final List<String> seen = new CopyOnWriteArrayList<>();

        @Override
        public TransactionStatus getTransaction(TransactionDefinition definition) {
            seen.add("begin on " + (Thread.currentThread().isVirtual() ? "virtual" : "platform"));
            return new SimpleTransactionStatus();
        }

        @Override
        public void commit(TransactionStatus status) {
            seen.add("commit");
        }

        @Override
        public void rollback(TransactionStatus status) {
            seen.add("rollback");
        }
    }

    private static <T> T onVirtualThread(java.util.function.Supplier<T> work) throws InterruptedException {
        AtomicReference<T> result = new AtomicReference<>();
        Thread.ofVirtual().start(() -> result.set(work.get())).join();
        return result.get();
    }

    @Test
    void a_virtual_threads_transaction_runs_on_a_platform_thread_with_its_logging_context() throws Exception {
        Outcomes tm = new Outcomes();
        TransactionTemplate tx = new PlatformThreadTransactions(tm);
        String seen = onVirtualThread(() -> {
            MDC.put("turn", "42");
            try {
                return tx.execute(s ->
                        (Thread.currentThread().isVirtual() ? "virtual" : "platform") + " turn=" + MDC.get("turn"));
            } finally {
                MDC.clear();
            }
        });
        assertEquals("platform turn=42", seen);
        assertEquals(List.of("begin on platform", "commit"), tm.seen);
    }

    @Test
    void a_platform_thread_or_an_open_transaction_runs_where_it_is() throws Exception {
        Outcomes tm = new Outcomes();
        TransactionTemplate tx = new PlatformThreadTransactions(tm);
        Thread caller = Thread.currentThread();
        assertSame(caller, tx.execute(s -> Thread.currentThread()));
        Boolean joinedOnVirtual = onVirtualThread(() -> {
            TransactionSynchronizationManager.setActualTransactionActive(true); // as inside an outer transaction
            try {
                return tx.execute(s -> Thread.currentThread().isVirtual());
            } finally {
                TransactionSynchronizationManager.setActualTransactionActive(false);
            }
        });
        assertTrue(joinedOnVirtual, "an open transaction's connection is bound to its thread: joined there");
    }

    @Test
    void a_failure_inside_the_transaction_reaches_the_caller_unchanged_and_rolls_back() throws Exception {
        Outcomes tm = new Outcomes();
        TransactionTemplate tx = PlatformThreadTransactions.of(new TransactionTemplate(tm));
        IllegalStateException thrown = new IllegalStateException("refused");
        Object caught = onVirtualThread(() -> {
            try {
                return tx.execute(s -> {
                    throw thrown;
                });
            } catch (RuntimeException e) {
                return e;
            }
        });
        assertSame(thrown, caught);
        assertEquals(List.of("begin on platform", "rollback"), tm.seen);
        assertSame(tx, PlatformThreadTransactions.of(tx), "wrapped once");
    }

    @Test
    void an_interrupted_caller_interrupts_its_transaction_and_waits_for_its_end() throws Exception {
        Outcomes tm = new Outcomes();
        TransactionTemplate tx = new PlatformThreadTransactions(tm);
        CountDownLatch running = new CountDownLatch(1);
        AtomicReference<String> outcome = new AtomicReference<>();
        Thread caller = Thread.ofVirtual().start(() -> {
            try {
                tx.execute(s -> {
                    running.countDown();
                    try {
                        Thread.sleep(60_000);
                        return null;
                    } catch (InterruptedException e) {
                        throw new IllegalStateException("stopped");
                    }
                });
                outcome.set("returned");
            } catch (IllegalStateException e) {
                outcome.set(e.getMessage() + ", caller interrupted: "
                        + Thread.currentThread().isInterrupted());
            }
        });
        assertTrue(running.await(10, TimeUnit.SECONDS));
        caller.interrupt();
        caller.join(10_000);
        assertFalse(caller.isAlive());
        assertEquals("stopped, caller interrupted: true", outcome.get());
        assertEquals(List.of("begin on platform", "rollback"), tm.seen);
        // the thread it ran on keeps no interrupt for the next transaction
        String next = onVirtualThread(
                () -> tx.execute(s -> "interrupted: " + Thread.currentThread().isInterrupted()));
        assertEquals("interrupted: false", next);
    }

    @Test
    void with_every_thread_busy_a_transaction_runs_on_its_callers_thread_instead_of_queueing() throws Exception {
        Outcomes tm = new Outcomes();
        TransactionTemplate tx = new PlatformThreadTransactions(tm, PlatformThreadTransactions.threads(2));
        CountDownLatch busy = new CountDownLatch(2);
        CountDownLatch release = new CountDownLatch(1);
        List<Thread> holders = new java.util.ArrayList<>();
        for (int i = 0; i < 2; i++) {
            holders.add(Thread.ofVirtual()
                    .start(() -> tx.execute(s -> {
                        busy.countDown();
                        try {
                            return release.await(30, TimeUnit.SECONDS);
                        } catch (InterruptedException e) {
                            throw new IllegalStateException(e);
                        }
                    })));
        }
        assertTrue(busy.await(10, TimeUnit.SECONDS));
        Boolean third =
                onVirtualThread(() -> tx.execute(s -> Thread.currentThread().isVirtual()));
        release.countDown();
        for (Thread holder : holders) {
            holder.join(10_000);
        }
        assertTrue(third, "the third transaction ran on its caller's virtual thread");
        assertEquals(List.of("begin on platform", "begin on platform", "begin on virtual"), tm.seen.subList(0, 3));
        assertEquals(6, tm.seen.size(), tm.seen.toString());
    }
}
