package dev.settle.ingest.accept;

import dev.settle.boot.PeriodicTask;
import dev.settle.ingest.IngestSettings;
import dev.settle.schema.DbTime;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

/**
 * Idempotency keys are honoured for {@code SETTLE_IDEMPOTENCY_RETENTION} (24 h, as Stripe, Inngest and Restate
 * keep theirs) after the message they created; past it the key is forgotten and the same key creates a new
 * message. A replay inside the retention is never affected: only keys of messages older than it are cleared.
 *
 * <ol>
 *   <li>Every {@code purge-interval} the cutoff is taken from the database clock: now − retention.</li>
 *   <li>{@link #FORGET} clears keys of messages created in [last cutoff, cutoff), in batches of {@link #BATCH},
 *       walking the created-at index forward, so a purge costs what expired since the last one.</li>
 *   <li>The cutoff becomes the next lower bound (kept in memory: a restarted instance walks from the start
 *       once). Several ingest instances may purge at once: each statement is idempotent.</li>
 * </ol>
 */
@Component
public class IdempotencyRetention extends PeriodicTask {
    private static final Logger log = LoggerFactory.getLogger(IdempotencyRetention.class);
    static final int BATCH = 1000;
    static final String CUTOFF = "SELECT DATE_SUB(UTC_TIMESTAMP(6), INTERVAL ? MICROSECOND)";
    static final String FORGET = """
            UPDATE chat_message SET idempotency_key = NULL
             WHERE created_at >= ? AND created_at < ? AND idempotency_key IS NOT NULL
             LIMIT ?""";
    private static final String BEGINNING = "1000-01-01 00:00:00.000000";

    private final JdbcTemplate jdbc;
    private final IngestSettings.Idempotency settings;
    private volatile String from = BEGINNING;

    public IdempotencyRetention(JdbcTemplate jdbc, IngestSettings settings) {
        super("idempotency-retention", settings.idempotency().purgeInterval());
        this.jdbc = jdbc;
        this.settings = settings.idempotency();
    }

    /** Forgets every key older than the retention; returns how many were forgotten. */
    public synchronized long purge() {
        long micros = settings.retention().toNanos() / 1000;
        String cutoff = DbTime.text(jdbc.queryForObject(CUTOFF, java.time.LocalDateTime.class, micros));
        long forgotten = 0;
        int rows;
        do {
            rows = jdbc.update(FORGET, from, cutoff, BATCH);
            forgotten += rows;
        } while (rows == BATCH);
        from = cutoff;
        return forgotten;
    }

    /** A failed purge is logged and tried again one {@code purge-interval} later. */
    @Override
    protected void tick() {
        try {
            long forgotten = purge();
            if (forgotten > 0) {
                log.info("forgot {} idempotency keys older than {}", forgotten, settings.retention());
            }
        } catch (RuntimeException e) {
            log.warn("idempotency key purge failed; retried in {}: {}", settings.purgeInterval(), e.toString());
        }
    }
}
