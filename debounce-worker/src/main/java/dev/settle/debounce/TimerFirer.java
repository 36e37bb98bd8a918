package dev.settle.debounce;

import dev.settle.boot.PeriodicTask;
import dev.settle.contracts.EventCodec;
import dev.settle.contracts.SessionReady;
import dev.settle.contracts.Topics;
import dev.settle.schema.DbTime;
import dev.settle.schema.LockedById;
import dev.settle.schema.SessionRules;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.jdbc.core.simple.JdbcClient;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.support.TransactionSynchronization;
import org.springframework.transaction.support.TransactionSynchronizationManager;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Fires due debounce timers: each armed row becomes exactly one {@link SessionReady} on
 * {@link Topics#SESSION_READY}, however many debounce-worker instances poll the same table.
 *
 * <p>A {@link PeriodicTask}: one loop on its own platform thread, started and stopped with the application, whose
 * {@link #round()} returns the pause before the next. Each round:
 * <ol>
 *   <li>Begin a short transaction and lock up to {@code batchSize} due rows
 *       ({@code fire_at <= UTC_TIMESTAMP(6)}) with {@code FOR UPDATE SKIP LOCKED} ({@link #LOCK_DUE}); rows
 *       another instance holds are skipped, not waited for. The cause is derived in the same statement
 *       ({@link SessionRules#TIMER_CAUSE}: {@code sweeper}, {@code maxwait}, {@code typing} or {@code window});
 *       {@code firedAt} is the database clock. The kind of window that set the row
 *       ({@code window_cause}: base or learned) tags the fire's metric, not the event.</li>
 *   <li>Publish one SessionReady per row, keyed by the session id, and wait for the broker's acks.</li>
 *   <li>Delete the fired rows ({@link #DELETE_FIRED}, one statement; exactly one row each), record where their
 *       bursts ended ({@link #RECORD_BURST_END}, one statement: the version each timer had seen; only for timers
 *       armed for a session that may be under {@code enqueue}) and commit.</li>
 *   <li>If publishing or deleting fails, roll back: the rows stay and fire on a later round (the events are
 *       hints, so a repeat after a partial publish is harmless); log and back off (100 ms doubling up to 2 s).</li>
 *   <li>A round that stopped waiting for its acks (the broker away) leaves its events with the producer, which
 *       keeps trying to deliver them. Until those acks settle (the broker took the events, or the producer gave them
 *       up), rounds lock no timer and publish nothing: they wait for the acks, holding nothing, at most a poll
 *       interval each ({@link #brokerAway()}). So only the first round of an outage holds its timers' locks for the
 *       publish timeout; an arm, a re-arm or a sweep of those sessions waits no longer than that, however long the
 *       broker stays away.</li>
 *   <li>A full batch means a backlog: go again at once.</li>
 * </ol>
 * Between rounds the loop asks the database how long until the earliest armed timer is due ({@link #NEXT_DUE},
 * one index lookup, no transaction) and sleeps exactly that long, at most {@code pollInterval}; when it wakes at a
 * timer's due time it fires without asking first. A timer armed in this process that may be due before the loop's
 * next look wakes it at once ({@link TimerWake}); a timer armed elsewhere (an agent's re-arm, a timer left by an
 * instance that died) is seen by the next look, at most {@code pollInterval} later. So a timer fires within a
 * millisecond or two of its due time, and an idle instance asks the database {@code 1 / pollInterval} times a
 * second.
 * Holding the row lock until the delete commits is what makes a fire exactly once per arm: a message that
 * arrives meanwhile waits for the lock (at most the publish timeout), then finds no row and arms a fresh
 * timer, instead of being deleted unseen with the fired one. The lock is on the timer row only, never on
 * {@code chat_session}.
 */
@Component
public class TimerFirer extends PeriodicTask implements TimerWake {
    private static final Duration PUBLISH_TIMEOUT = Duration.ofSeconds(10);
    /** The longest pause after failed rounds (the backoff starts at 100 ms and doubles up to this). */
    private static final Duration MAX_BACKOFF = Duration.ofSeconds(2);

    static final String LOCK_DUE =
            "SELECT d.session_id, d.armed_version, " + SessionRules.TIMER_CAUSE + " AS cause, " + """
                   d.window_cause, d.records_burst,
                   UTC_TIMESTAMP(6) AS fired_at
              FROM debounce_timer d
             WHERE d.fire_at <= UTC_TIMESTAMP(6)
             ORDER BY d.fire_at
             LIMIT :batchSize
               FOR UPDATE SKIP LOCKED
            """;

    /** Microseconds until the earliest timer is due (≤ 0: due now), on the database clock; NULL when none. */
    static final String NEXT_DUE = """
            SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), MIN(fire_at)) FROM debounce_timer""";

    /**
     * The round's fired rows, in one statement: they are locked by this transaction since {@link #LOCK_DUE}, so
     * nothing changed them and each id deletes exactly one row; read by the primary key ({@link LockedById}), so it
     * neither waits for nor locks any other timer.
     */
    static final String DELETE_FIRED = "DELETE d FROM " + LockedById.TIMERS + " WHERE d.session_id IN (:sessionIds)";

    /**
     * The bursts these timers closed end at the versions they had seen (read by the agent under {@code enqueue});
     * only for timers whose {@code records_burst} says their session may be under {@code enqueue}. One
     * {@link #BURST_END} row per timer: (session id, version).
     */
    static final String RECORD_BURST_END =
            "INSERT IGNORE INTO session_burst (session_id, end_version, fired_at) VALUES ";

    static final String BURST_END = "(?, ?, UTC_TIMESTAMP(6))";

    private record DueTimer(
            long sessionId, long version, String cause, String windowCause, boolean recordsBurst, Instant firedAt) {}

    private final JdbcClient jdbc;
    private final TransactionTemplate tx;
    private final KafkaTemplate<String, String> kafka;
    private final DebounceSettings settings;
    private final AtomicLong fired = new AtomicLong();
    /** Between the start of a round and its end: a timer armed meanwhile may be missed by the round's look. */
    private volatile boolean inRound = true;
    /** When the current pause ends ({@link System#nanoTime()}), once a round ended. */
    private volatile long pauseEnds;
    /** The pause ends at a timer's due time: the next round fires without looking first. */
    private boolean pauseEndsAtDue;

    private final MeterRegistry meters;
    private final Duration publishTimeout;
    /**
     * The acks of the last round that stopped waiting for them (null: none pending): while they are pending the
     * broker is taken as away.
     */
    private volatile CompletableFuture<Void> unacked;

    @Autowired
    public TimerFirer(
            JdbcClient jdbc,
            PlatformTransactionManager txManager,
            KafkaTemplate<String, String> kafka,
            DebounceSettings settings,
            MeterRegistry meters) {
        this(jdbc, txManager, kafka, settings, meters, PUBLISH_TIMEOUT);
    }

    /** @param publishTimeout how long a round waits for the broker's acks while it holds its timers' locks */
    TimerFirer(
            JdbcClient jdbc,
            PlatformTransactionManager txManager,
            KafkaTemplate<String, String> kafka,
            DebounceSettings settings,
            MeterRegistry meters,
            Duration publishTimeout) {
        super("debounce-timer-firer", MAX_BACKOFF);
        this.meters = meters;
        this.publishTimeout = publishTimeout;
        this.jdbc = jdbc;
        this.tx = new TransactionTemplate(txManager);
        this.kafka = kafka;
        this.settings = settings;
    }

    /** Timers this instance fired (published and deleted) since it started. */
    public long firedCount() {
        return fired.get();
    }

    /**
     * One round: fires up to a batch of due timers in one transaction; returns how many fired (none while the broker
     * is away).
     */
    int fireDue() {
        if (brokerAway()) {
            return 0;
        }
        Integer count = tx.execute(status -> {
            List<DueTimer> due = jdbc.sql(LOCK_DUE)
                    .param("batchSize", settings.batchSize())
                    .query((rs, n) -> new DueTimer(
                            rs.getLong("session_id"),
                            rs.getLong("armed_version"),
                            rs.getString("cause"),
                            rs.getString("window_cause"),
                            rs.getBoolean("records_burst"),
                            DbTime.instant(rs, "fired_at")))
                    .list();
            if (due.isEmpty()) {
                return 0;
            }
            publish(due);
            afterCommit(due);
            int rows = jdbc.sql(DELETE_FIRED)
                    .param("sessionIds", due.stream().map(DueTimer::sessionId).toList())
                    .update();
            if (rows != due.size()) {
                throw new IllegalStateException("deleting " + due.size() + " locked timers touched " + rows + " rows");
            }
            recordBurstEnds(due.stream().filter(DueTimer::recordsBurst).toList());
            return due.size();
        });
        fired.addAndGet(count);
        return count;
    }

    private void recordBurstEnds(List<DueTimer> ends) {
        if (ends.isEmpty()) {
            return;
        }
        List<Object> params = new ArrayList<>();
        ends.forEach(t -> {
            params.add(t.sessionId());
            params.add(t.version());
        });
        jdbc.sql(RECORD_BURST_END + String.join(", ", Collections.nCopies(ends.size(), BURST_END)))
                .params(params)
                .update();
    }

    /**
     * Counts {@code settle.debounce.fires{cause,window}} once the fire committed (a rolled-back round fires again):
     * {@code window} is the kind of window that set the timer ({@code base} or {@code learned}, see
     * {@link SessionPacing}).
     */
    private void afterCommit(List<DueTimer> due) {
        TransactionSynchronizationManager.registerSynchronization(new TransactionSynchronization() {
            @Override
            public void afterCommit() {
                due.forEach(t -> meters.counter("settle.debounce.fires", "cause", t.cause(), "window", t.windowCause())
                        .increment());
            }
        });
    }

    private void publish(List<DueTimer> due) {
        try {
            CompletableFuture<?>[] acks = due.stream()
                    .map(t -> kafka.send(
                            Topics.SESSION_READY,
                            String.valueOf(t.sessionId()),
                            EventCodec.encode(new SessionReady(t.sessionId(), t.version(), t.cause(), t.firedAt()))))
                    .toArray(CompletableFuture[]::new);
            CompletableFuture<Void> all = CompletableFuture.allOf(acks);
            try {
                all.get(publishTimeout.toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                unacked = all;
                throw e;
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting for the broker", e);
        } catch (Exception e) {
            throw new IllegalStateException("publishing " + due.size() + " SessionReady events failed", e);
        }
    }

    /**
     * Whether the acks a round stopped waiting for are still pending, after waiting for them at most a poll interval
     * with nothing locked. Once they settle, either way, rounds fire again: a broker that took the events is back; a
     * producer that gave them up leaves the next round to find out.
     */
    private boolean brokerAway() {
        CompletableFuture<Void> pending = unacked;
        if (pending == null) {
            return false;
        }
        try {
            pending.get(settings.pollInterval().toMillis(), TimeUnit.MILLISECONDS);
        } catch (TimeoutException e) {
            return true;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return true;
        } catch (ExecutionException e) {
            // given up by the producer: the next round publishes again
        }
        unacked = null;
        return false;
    }

    /** How long to wait before the next round: 0 when a timer is due, else until the earliest, at most a poll. */
    Duration untilNextDue() {
        List<Long> next = jdbc.sql(NEXT_DUE).query(Long.class).list();
        return untilDue(next.isEmpty() ? null : next.getFirst(), settings.pollInterval());
    }

    /**
     * One round: when a timer is due, fire a batch and go again at once ({@link Duration#ZERO}); when none
     * fired although one is due, another instance holds those rows (SKIP LOCKED), so wait a poll interval
     * instead of spinning; else sleep until the earliest timer is due, at most a poll interval. A round that
     * begins at a due time it looked up fires at once; an empty batch then looks again.
     */
    @Override
    protected Duration round() {
        inRound = true;
        Duration pause = nextPause();
        pauseEnds = System.nanoTime() + pause.toNanos();
        inRound = false;
        return pause;
    }

    private Duration nextPause() {
        if (pauseEndsAtDue && System.nanoTime() - pauseEnds >= 0) {
            pauseEndsAtDue = false;
            if (fireDue() >= settings.batchSize()) {
                return Duration.ZERO;
            }
        }
        Duration pause = untilNextDue();
        if (pause.isZero()) {
            return fireDue() == 0 ? settings.pollInterval() : Duration.ZERO;
        }
        pauseEndsAtDue = pause.compareTo(settings.pollInterval()) < 0;
        return pause;
    }

    /**
     * Wakes the loop when this timer may be due before its next look: never for a timer due a poll interval or more
     * from now (every pause is at most that); for a sooner one, when the loop is in a round (its look may have
     * missed the timer) or would sleep past it. Database and local clocks are taken as one; a skew between them
     * delays such a timer by at most the skew.
     */
    @Override
    public void armed(Instant dueAt) {
        long in = Duration.between(Instant.now(), dueAt).toNanos();
        if (in >= settings.pollInterval().toNanos()) {
            return;
        }
        if (inRound || System.nanoTime() + in - pauseEnds < 0) {
            wake();
        }
    }

    /** The first look at the table happens as soon as the application starts. */
    @Override
    protected Duration firstDelay() {
        return Duration.ZERO;
    }
}
