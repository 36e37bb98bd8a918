package dev.settle.ingest.accept;

import dev.settle.ingest.IngestApp;
import dev.settle.ingest.IngestSettings;
import dev.settle.ingest.http.ApiKeyFilter;
import org.junit.jupiter.api.Test;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.TransactionException;
import org.springframework.transaction.TransactionStatus;
import org.springframework.transaction.support.TransactionTemplate;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * A message written alone has its transaction run on a platform thread, though its request runs on a virtual thread,
 * with group commit on or off, whatever template it is given ({@link dev.settle.boot.PlatformThreadTransactions}; a
 * group commit's batch stays on its leader's thread, docs/PERFORMANCE.md 2026-12-06 night): between two statements a
 * virtual thread waits for one of as many carriers as cores behind every runnable request handler, and the session rows
 * its transaction holds stay locked meanwhile (thread dumps of the chaos overload run, docs/RELIABILITY.md).
 */
class AcceptTransactionThreadTest {
    /** Records on which kind of thread each transaction began. */
    record Recording(PlatformTransactionManager real, List<Boolean> virtual) implements PlatformTransactionManager {
        @Override
        public TransactionStatus getTransaction(TransactionDefinition definition) throws TransactionException {
            virtual.add(Thread.currentThread().isVirtual());
            return real.getTransaction(definition);
        }

        @Override
        public void commit(TransactionStatus status) throws TransactionException {
            real.commit(status);
        }

        @Override
        public void rollback(TransactionStatus status) throws TransactionException {
            real.rollback(status);
        }
    }

    @Test
    void a_request_on_a_virtual_thread_has_its_transaction_run_on_a_platform_thread() throws Exception {
        for (boolean groupCommit : new boolean[] {true, false}) {
            try (IngestApp app = new IngestApp("acceptthread", Map.of("settle.ingest.group-commit", groupCommit))) {
                List<Boolean> virtual = new CopyOnWriteArrayList<>();
                Recording tm = new Recording(app.context.getBean(PlatformTransactionManager.class), virtual);
                MessageAcceptance acceptance = new MessageAcceptance(
                        app.jdbc, new TransactionTemplate(tm), app.context.getBean(IngestSettings.class));
                AtomicReference<Object> outcome = new AtomicReference<>();
                Thread.ofVirtual()
                        .start(() -> {
                            try {
                                outcome.set(acceptance.accept(
                                        ApiKeyFilter.DEFAULT_TENANT,
                                        new MessageRequest("thread-" + UUID.randomUUID(), "hi", null, "sha-hi")));
                            } catch (RuntimeException e) {
                                outcome.set(e);
                            }
                        })
                        .join();
                assertNotNull(outcome.get());
                assertEquals(
                        MessageAcceptance.Accepted.class,
                        outcome.get().getClass(),
                        outcome.get().toString());
                assertEquals(List.of(false), virtual, "group commit " + groupCommit + ": the transactions' threads");
            }
        }
    }
}
