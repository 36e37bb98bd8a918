package dev.settle.bench;

import org.springframework.jdbc.core.JdbcTemplate;

import java.time.Duration;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Samples InnoDB's lock waits every 100 ms while a stage runs: which statement waits, on which index, for a lock
 * held by a transaction running which statement (null = that transaction is between statements, i.e. waiting on
 * its client). The counts say which lock serialises the stage, if any.
 */
final class LockWaits implements AutoCloseable {
    static final String WAITS = """
            SELECT SUBSTRING(REGEXP_REPLACE(r.trx_query, '\\\\s+', ' '), 1, 60) AS waiting,
                   SUBSTRING(REGEXP_REPLACE(COALESCE(b.trx_query, '(idle in transaction)'), '\\\\s+', ' '), 1, 60) AS blocking,
                   l.lock_index, l.lock_mode
              FROM information_schema.INNODB_LOCK_WAITS w
              JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id
              JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id
              JOIN information_schema.INNODB_LOCKS l ON l.lock_id = w.requested_lock_id""";

    private final Map<String, AtomicLong> counts = new ConcurrentHashMap<>();
    private final AtomicLong samples = new AtomicLong();
    private final Thread thread;

    LockWaits(JdbcTemplate jdbc) {
        thread = Thread.ofPlatform().daemon().name("lock-waits").start(() -> {
            while (!Thread.currentThread().isInterrupted()) {
                try {
                    jdbc.query(WAITS, rs -> {
                        String key = rs.getString("waiting") + " ⟵ " + rs.getString("blocking") + " ["
                                + rs.getString("lock_index") + ", " + rs.getString("lock_mode") + "]";
                        counts.computeIfAbsent(key, k -> new AtomicLong()).incrementAndGet();
                    });
                    samples.incrementAndGet();
                    Thread.sleep(Duration.ofMillis(100));
                } catch (InterruptedException e) {
                    return;
                } catch (RuntimeException e) {
                    counts.computeIfAbsent(
                                    "(sampling failed: " + e.getClass().getSimpleName() + ")", k -> new AtomicLong())
                            .incrementAndGet();
                    return;
                }
            }
        });
    }

    /** Waits seen per sample, largest first. */
    Map<String, Double> perSample() {
        Map<String, Double> result = new LinkedHashMap<>();
        long n = Math.max(1, samples.get());
        counts.entrySet().stream()
                .sorted((a, b) -> Long.compare(b.getValue().get(), a.getValue().get()))
                .limit(6)
                .forEach(e -> result.put(e.getKey(), e.getValue().get() / (double) n));
        return result;
    }

    @Override
    public void close() {
        thread.interrupt();
        try {
            thread.join(2000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
