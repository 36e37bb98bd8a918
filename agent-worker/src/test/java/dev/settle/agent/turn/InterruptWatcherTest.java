package dev.settle.agent.turn;

import dev.settle.agent.TestAgent;
import dev.settle.agent.lease.TurnControl;
import dev.settle.testsupport.SharedInfra;
import dev.settle.testsupport.SqlTrace;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The interrupt poll among many turns in flight: exactly the sessions whose version moved past their turn's, under
 * merge and before max-wait, are interrupted, each once, a message committed after a higher id was read included;
 * and what a poll sends does not grow with the turns in flight. The watcher's own loop is stopped: each test polls
 * on its own thread ({@link InterruptWatcher#check()}), so every statement of a poll is counted.
 */
class InterruptWatcherTest {
    private static final int MANY = 2_000;
    /** Session ids no session has: turns in flight whose sessions get no message. */
    private static final long FAKE = 1_000_000_000L;

    static TestAgent agent;
    static InterruptWatcher watcher;
    private final List<Long> watched = new ArrayList<>();
    /** per watched session: how many times its turn was interrupted */
    private final Map<Long, AtomicInteger> interrupts = new HashMap<>();

    @BeforeAll
    static void start() {
        agent = new TestAgent(
                "interrupts",
                Map.of(
                        "spring.datasource.url",
                        SqlTrace.url(SharedInfra.newDatabase("interrupts"), "agent-worker"),
                        "settle.debounce.maxwait",
                        "60s"));
        watcher = agent.bean(InterruptWatcher.class);
        watcher.stop();
    }

    @AfterAll
    static void stop() {
        agent.close();
    }

    @AfterEach
    void forget() {
        watched.forEach(watcher::forget);
    }

    @Test
    void exactly_the_moved_merge_sessions_before_max_wait_are_interrupted_once_a_late_commit_included()
            throws Exception {
        long late = agent.sessionWithMessages(1);
        long merged = agent.sessionWithMessages(1);
        long enqueued = agent.sessionWithMessages(1);
        long pastMaxWait = agent.sessionWithMessages(1);
        long quiet = agent.sessionWithMessages(1);
        long seenByItsTurn = agent.sessionWithMessages(2);
        long notWatched = agent.sessionWithMessages(1);
        agent.jdbc.update("UPDATE chat_session SET policy = 'enqueue' WHERE id = ?", enqueued);
        agent.jdbc.update(
                "UPDATE chat_session SET oldest_unanswered_at = UTC_TIMESTAMP(6) - INTERVAL 1 HOUR WHERE id = ?",
                pastMaxWait);
        for (long s : List.of(late, merged, enqueued, pastMaxWait, quiet)) {
            watch(s, 1);
        }
        watch(seenByItsTurn, 2);
        for (int i = 0; i < MANY; i++) {
            watch(FAKE + i, 1);
        }
        poll(); // the tail starts

        try (Connection holder = agent.bean(DataSource.class).getConnection()) {
            holder.setAutoCommit(false);
            long lateId = insertMessage(holder, late);
            for (long s : List.of(merged, enqueued, pastMaxWait, notWatched)) {
                agent.newMessage(s);
            }
            long mergedId = agent.jdbc.queryForObject(
                    "SELECT id FROM chat_message WHERE session_id = ? AND version = 2", Long.class, merged);
            assertTrue(lateId < mergedId, "the held message's id is below one already committed");

            List<SqlTrace.Statement> first = poll();
            assertEquals(List.of(1, 3), shape(first), "the tail, then one check of the three moved sessions");
            assertEquals(Map.of(merged, 1), interrupted());

            holder.commit();
        }
        // reads start above the highest id seen; one in MessageTail.RESCAN_EVERY rereads the lagged range
        List<SqlTrace.Statement> second = List.of();
        for (int i = 0; i < MessageTail.RESCAN_EVERY && !interrupted().containsKey(late); i++) {
            second = poll();
        }
        assertEquals(List.of(1, 1), shape(second), "the tail, then one check of the late session");
        assertEquals(Map.of(late, 1, merged, 1), interrupted(), "the late commit is seen");

        List<SqlTrace.Statement> third = poll();
        assertEquals(List.of(1), shape(third), "every version was judged: the tail alone");
        assertEquals(Map.of(late, 1, merged, 1), interrupted(), "each turn is interrupted once");

        agent.newMessage(enqueued);
        agent.newMessage(quiet);
        List<SqlTrace.Statement> fourth = poll();
        assertEquals(List.of(1, 2), shape(fourth), "two sessions moved past what was judged");
        assertEquals(
                Map.of(late, 1, merged, 1, quiet, 1),
                interrupted(),
                "the quiet session's message interrupts; enqueue still does not");
    }

    @Test
    void a_poll_sends_the_same_statement_for_10_and_for_2000_turns_in_flight() {
        for (int i = 0; i < 10; i++) {
            watch(FAKE + MANY + i, 1);
        }
        poll(); // the tail starts
        List<SqlTrace.Statement> ten = poll();
        for (int i = 10; i < MANY; i++) {
            watch(FAKE + MANY + i, 1);
        }
        List<SqlTrace.Statement> many = poll();
        assertEquals(sql(ten), sql(many), "the same statements, whatever the number of turns in flight (values aside)");
        assertEquals(List.of(1), shape(many), "nothing moved: the tail alone");
        assertEquals(Map.of(), interrupted());
    }

    private void watch(long sessionId, long toVersion) {
        TurnControl control = new TurnControl(null);
        AtomicInteger count = new AtomicInteger();
        control.whileStreaming(count::incrementAndGet);
        interrupts.put(sessionId, count);
        watched.add(sessionId);
        watcher.watch(sessionId, toVersion, control);
    }

    /** One poll on this thread; its statements. */
    private static List<SqlTrace.Statement> poll() {
        String thread = Thread.currentThread().getName();
        SqlTrace.start();
        watcher.check();
        return SqlTrace.stop().stream().filter(s -> s.thread().equals(thread)).toList();
    }

    /**
     * A poll's statements after the tail's start: 1 for the tail, then per check the number of sessions it asks
     * about.
     */
    private static List<Integer> shape(List<SqlTrace.Statement> statements) {
        List<Integer> shape = new ArrayList<>();
        for (SqlTrace.Statement s : statements) {
            if (s.sql().contains("FROM chat_message")) {
                shape.add(1);
            } else {
                assertTrue(s.sql().contains("FROM chat_session s"), s.sql());
                shape.add(s.sql().split("\\(s\\.id = ", -1).length - 1);
            }
        }
        return shape;
    }

    /** The statements' text, each bound value as {@code #} (the trace shows statements with their values). */
    private static List<String> sql(List<SqlTrace.Statement> statements) {
        return statements.stream()
                .map(s -> s.sql().replaceAll("\\b\\d+\\b", "#"))
                .toList();
    }

    /** The sessions whose turns were interrupted, and how many times. */
    private Map<Long, Integer> interrupted() {
        Map<Long, Integer> out = new TreeMap<>();
        interrupts.forEach((s, n) -> {
            if (n.get() > 0) {
                out.put(s, n.get());
            }
        });
        return out;
    }

    /** What ingest does for one more message, in the caller's open transaction; the message's id. */
    private static long insertMessage(Connection c, long sessionId) throws Exception {
        try (PreparedStatement bump = c.prepareStatement(
                "UPDATE chat_session SET version = version + 1, last_message_at = UTC_TIMESTAMP(6) WHERE id = ?")) {
            bump.setLong(1, sessionId);
            bump.executeUpdate();
        }
        long version;
        try (PreparedStatement read = c.prepareStatement("SELECT version FROM chat_session WHERE id = ?")) {
            read.setLong(1, sessionId);
            try (ResultSet rs = read.executeQuery()) {
                rs.next();
                version = rs.getLong(1);
            }
        }
        try (PreparedStatement insert = c.prepareStatement("""
                INSERT INTO chat_message (message_uid, session_id, role, text, version, created_at)
                VALUES (?, ?, 'user', 'late', ?, UTC_TIMESTAMP(6))""")) {
            insert.setString(1, "msg_" + UUID.randomUUID());
            insert.setLong(2, sessionId);
            insert.setLong(3, version);
            insert.executeUpdate();
        }
        try (PreparedStatement id = c.prepareStatement("SELECT LAST_INSERT_ID()");
                ResultSet rs = id.executeQuery()) {
            rs.next();
            return rs.getLong(1);
        }
    }
}
