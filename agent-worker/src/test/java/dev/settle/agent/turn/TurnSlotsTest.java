package dev.settle.agent.turn;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.AppenderBase;
import dev.settle.agent.TestAgent;
import dev.settle.agent.lease.Heartbeats;
import dev.settle.agent.lease.SessionLease;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;
import org.springframework.dao.RecoverableDataAccessException;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The end of a turn: a heartbeat that finds a lease lost never interrupts the turn's thread once the turn has
 * closed its beat (its release and re-arm run after that), and the orphaned-lease scanner's turns count against
 * {@code settle.agent.max-in-flight}, and a turn that fails unexpectedly is logged and gives its slot back. Lease TTL
 * 1 h: no scheduled renewal runs during a test; each calls its own.
 */
class TurnSlotsTest {
    static TestAgent agent;

    @BeforeAll
    static void start() {
        agent = new TestAgent("slots", Map.of("settle.lease.ttl", "1h", "settle.agent.max-in-flight", "1"));
    }

    @AfterAll
    static void stop() {
        agent.close();
    }

    @Test
    void a_renewal_that_finds_the_lease_lost_after_the_turn_closed_its_beat_does_not_interrupt_the_release()
            throws Exception {
        Heartbeats heartbeats = agent.bean(Heartbeats.class);
        SessionLease leases = agent.bean(SessionLease.class);
        SessionLease.Lease lease = leases.claim(agent.sessionWithMessages(1));
        CountDownLatch started = new CountDownLatch(1);
        CountDownLatch closeNow = new CountDownLatch(1);
        CountDownLatch closed = new CountDownLatch(1);
        CountDownLatch check = new CountDownLatch(1);
        AtomicBoolean interruptedAfterClose = new AtomicBoolean();
        // the turn's thread: its beat runs, then the turn ends (beat closed, interrupt flag cleared, as TurnRunner
        // does)
        Thread turn = Thread.ofVirtual().start(() -> {
            Heartbeats.Beat beat = heartbeats.start(lease);
            started.countDown();
            try {
                closeNow.await();
            } catch (InterruptedException e) {
                throw new IllegalStateException("interrupted while its lease was still held", e);
            }
            beat.close();
            Thread.interrupted();
            closed.countDown();
            boolean interrupted = false;
            while (true) {
                try {
                    check.await();
                    break;
                } catch (InterruptedException e) {
                    interrupted = true;
                }
            }
            // what release() and the re-arm would run with
            interruptedAfterClose.set(interrupted || Thread.currentThread().isInterrupted());
        });
        assertTrue(started.await(10, TimeUnit.SECONDS));

        // the renewal decides "lost" while the turn still runs, and is held right there (its log line)
        CountDownLatch deciding = new CountDownLatch(1);
        CountDownLatch proceed = new CountDownLatch(1);
        Logger logger = (Logger) LoggerFactory.getLogger(Heartbeats.class);
        AppenderBase<ILoggingEvent> hold = new AppenderBase<>() {
            @Override
            protected void append(ILoggingEvent event) {
                if (event.getFormattedMessage().contains("lost; stopping the turn")) {
                    deciding.countDown();
                    try {
                        proceed.await(30, TimeUnit.SECONDS);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }
        };
        hold.start();
        logger.addAppender(hold);
        try {
            agent.jdbc.update("UPDATE chat_session SET lease_token = 'someone-else' WHERE id = ?", lease.sessionId());
            Thread renewal = Thread.ofPlatform().start(heartbeats::renew);
            assertTrue(deciding.await(10, TimeUnit.SECONDS), "the renewal found the lease lost");
            closeNow.countDown(); // the turn ends meanwhile
            assertTrue(closed.await(10, TimeUnit.SECONDS));
            proceed.countDown();
            renewal.join(10_000);
            assertFalse(renewal.isAlive());
        } finally {
            logger.detachAppender(hold);
            proceed.countDown();
        }
        check.countDown();
        turn.join(10_000);
        assertFalse(interruptedAfterClose.get(), "a heartbeat interrupt landed after the turn closed its beat");
    }

    @Test
    void the_orphan_scanner_starts_no_turn_while_every_slot_is_taken() {
        OrphanedLeaseScanner scanner = agent.bean(OrphanedLeaseScanner.class);
        TurnSlots slots = agent.bean(TurnSlots.class);
        long session = agent.sessionWithMessages(1);
        agent.jdbc.update("""
                UPDATE chat_session SET lease_token = 'dead-holder', lease_epoch = 1,
                                        lease_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND
                 WHERE id = ?""", session);
        assertTrue(slots.tryAcquire(), "the one slot: a turn in flight");
        try {
            scanner.tick();
            // a turn started anyway would claim the lease within milliseconds
            await().during(Duration.ofSeconds(1))
                    .atMost(Duration.ofSeconds(3))
                    .until(() -> agent.count("SELECT lease_epoch FROM chat_session WHERE id = ?", session) == 1);
        } finally {
            slots.release();
        }
        scanner.tick();
        await().atMost(Duration.ofSeconds(30))
                .until(() -> agent.count("SELECT replied_version FROM chat_session WHERE id = ?", session) == 1);
        assertEquals(2, agent.count("SELECT lease_epoch FROM chat_session WHERE id = ?", session), "taken over once");
        await().atMost(Duration.ofSeconds(10)).until(() -> slots.available() == 1);
    }

    @Test
    void a_turn_that_fails_unexpectedly_is_logged_and_gives_its_slot_back() throws Exception {
        TurnSlots slots = agent.bean(TurnSlots.class);
        List<String> logged = new CopyOnWriteArrayList<>();
        AppenderBase<ILoggingEvent> capture = new AppenderBase<>() {
            @Override
            protected void append(ILoggingEvent e) {
                logged.add(e.getLevel() + " " + e.getFormattedMessage()
                        + (e.getThrowableProxy() == null ? "" : " +stack"));
            }
        };
        capture.start();
        Logger logger = (Logger) LoggerFactory.getLogger(TurnSlots.class);
        logger.addAppender(capture);
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            assertTrue(slots.tryAcquire(), "the one slot");
            slots.start(threads, 42, () -> {
                throw new IllegalStateException("boom");
            });
            await().atMost(Duration.ofSeconds(10)).until(() -> slots.available() == 1);
            assertTrue(slots.tryAcquire(), "the slot again");
            slots.start(threads, 43, () -> {
                throw new RecoverableDataAccessException("Communications link failure");
            });
            await().atMost(Duration.ofSeconds(10)).until(() -> slots.available() == 1);
        } finally {
            logger.detachAppender(capture);
        }
        assertEquals(
                List.of(
                        "ERROR turn for session 42 failed unexpectedly; the sweeper will retry +stack",
                        "WARN turn for session 43 failed on a database error; the sweeper will retry: "
                                + "org.springframework.dao.RecoverableDataAccessException: Communications link failure"),
                logged);
        assertFalse(slots.running(42) || slots.running(43), "neither session has a turn in flight any more");
    }
}
