package dev.settle.ingest;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.LocalDateTime;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * With group commit, a transaction's COMMIT overlaps what starts next: what it held back starts when it has sent its
 * last statement, not when its commit returns; and messages that arrive alone write side by side. Commits are held at a {@link CommitGate} to make the overlap
 * certain: a second message arriving while the first one's commit is held reaches its own commit (another session) or
 * waits for the first one's row (the same session), and every message is answered 202 after its own commit, with
 * versions and times in order and no batch failed.
 */
class GroupCommitOverlapTest {
    static IngestApp app;

    @BeforeAll
    static void start() {
        app = new IngestApp(
                "gc_overlap",
                Map.of(
                        "settle.limits.rate",
                        "0",
                        "settle.ingest.group-commit",
                        "true",
                        // a batch waiting for a held row stays waiting (the stall test); BatchAcceptanceLockTest
                        // tries the bound
                        "settle.ingest.group-commit-lock-wait",
                        "1m",
                        StatementCounter.PROPERTY,
                        CommitGate.class.getName()));
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    @AfterEach
    void opened() {
        CommitGate.GATE.open();
    }

    /** Posts on a thread of its own (the common pool may have one thread, held by the first post). */
    static CompletableFuture<HttpResponse<String>> post(String session, String text) {
        return CompletableFuture.supplyAsync(
                () -> app.post(
                        "/v1/sessions/" + session + "/messages", "application/json", "{\"text\":\"" + text + "\"}"),
                r -> Thread.ofPlatform().start(r));
    }

    static long version(String session) {
        Long v = app.jdbc.queryForObject(
                "SELECT COALESCE(MAX(m.version), 0) FROM chat_message m JOIN chat_session s ON s.id = m.session_id "
                        + "WHERE s.external_id = ?",
                Long.class,
                session);
        return v == null ? 0 : v;
    }

    /** Until exactly one session upsert waits for a row lock (the test's ingest app is the only writer). */
    static void awaitOneUpsertWaitingForItsRow() {
        awaitUpsertsWaitingForTheirRow(1);
    }

    /** Until exactly {@code n} session upserts wait for a row lock. */
    static void awaitUpsertsWaitingForTheirRow(int n) {
        await().atMost(Duration.ofSeconds(10))
                .until(() -> app.jdbc.queryForObject(
                                "SELECT COUNT(*) FROM information_schema.innodb_trx WHERE trx_state = 'LOCK WAIT' "
                                        + "AND trx_query LIKE 'INSERT INTO chat_session%'",
                                Integer.class)
                        == n);
    }

    /** Locks a session's row by its primary key (one row, no gap) in {@code c}'s open transaction. */
    static void lockRow(java.sql.Connection c, String session) throws java.sql.SQLException {
        c.setAutoCommit(false);
        try (java.sql.PreparedStatement lock =
                c.prepareStatement("SELECT id FROM chat_session WHERE id = ? FOR UPDATE")) {
            lock.setLong(
                    1,
                    app.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, session));
            lock.executeQuery().close();
        }
    }

    @Test
    void a_batch_for_another_session_commits_while_the_batch_before_it_is_committing() {
        String a = "overlap-a-" + UUID.randomUUID();
        String b = "overlap-b-" + UUID.randomUUID();
        CommitGate.GATE.close();
        CompletableFuture<HttpResponse<String>> first = post(a, "first");
        await().atMost(Duration.ofSeconds(10)).until(() -> CommitGate.GATE.waiting() == 1);
        CompletableFuture<HttpResponse<String>> second = post(b, "second");
        // the second batch sent its statements and waits at its own commit, beside the first one's
        await().atMost(Duration.ofSeconds(10)).until(() -> CommitGate.GATE.waiting() == 2);
        assertEquals(0, version(a), "nothing is visible before its commit");
        assertEquals(0, version(b));
        assertTrue(!first.isDone() && !second.isDone(), "202 only after the commit");
        CommitGate.GATE.open();
        assertEquals(202, first.join().statusCode(), first.join().body());
        assertEquals(202, second.join().statusCode(), second.join().body());
        assertEquals(1, version(a));
        assertEquals(1, version(b));
        assertEquals(0.0, app.failedBatches());
    }

    @Test
    void a_batch_for_the_same_session_waits_for_the_row_and_comes_after_it() {
        String a = "overlap-same-" + UUID.randomUUID();
        CommitGate.GATE.close();
        CompletableFuture<HttpResponse<String>> first = post(a, "first");
        await().atMost(Duration.ofSeconds(10)).until(() -> CommitGate.GATE.waiting() == 1);
        CompletableFuture<HttpResponse<String>> second = post(a, "second");
        // the second leads at once and waits for the row the first one holds until its commit
        awaitOneUpsertWaitingForItsRow();
        assertEquals(1, CommitGate.GATE.waiting());
        CommitGate.GATE.open();
        assertEquals(202, first.join().statusCode(), first.join().body());
        assertEquals(202, second.join().statusCode(), second.join().body());
        List<Map<String, Object>> rows = app.jdbc.queryForList(
                "SELECT m.text, m.version, m.created_at FROM chat_message m JOIN chat_session s ON s.id = m.session_id "
                        + "WHERE s.external_id = ? ORDER BY m.version",
                a);
        assertEquals(
                List.of("first", "second"),
                rows.stream().map(r -> r.get("text")).toList());
        assertEquals(
                List.of(1L, 2L),
                rows.stream().map(r -> ((Number) r.get("version")).longValue()).toList());
        LocalDateTime t1 = (LocalDateTime) rows.get(0).get("created_at");
        LocalDateTime t2 = (LocalDateTime) rows.get(1).get("created_at");
        assertTrue(t2.isAfter(t1), "times rise with versions: " + t1 + ", " + t2);
        assertEquals(0.0, app.failedBatches());
    }

    /**
     * A message that arrives alone writes beside another one alone: a session whose row another transaction holds
     * (here the test's; in production a reply commit) holds up its own messages, not another session's.
     */
    @Test
    void a_message_alone_is_not_held_up_by_another_sessions_locked_row() throws Exception {
        String held = "lane-held-" + UUID.randomUUID();
        String free = "lane-free-" + UUID.randomUUID();
        assertEquals(202, post(held, "before").join().statusCode());
        // both sessions exist: a new session's key inserted next to the held one would wait for the gap lock that
        // the held session's waiting upsert asks for (InnoDB), with or without group commit
        assertEquals(202, post(free, "before").join().statusCode());
        javax.sql.DataSource ds = app.context.getBean(javax.sql.DataSource.class);
        CompletableFuture<HttpResponse<String>> waiting;
        try (java.sql.Connection c = ds.getConnection()) {
            lockRow(c, held);
            waiting = post(held, "held");
            awaitOneUpsertWaitingForItsRow();
            HttpResponse<String> other = post(free, "not held").get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(202, other.statusCode(), other.body());
            assertEquals(2, version(free));
            assertTrue(!waiting.isDone(), "the held session's message waits for its row");
            c.rollback();
        }
        assertEquals(202, waiting.join().statusCode());
        assertEquals(2, version(held));
        assertEquals(0.0, app.failedBatches());
    }

    /**
     * Messages queued behind writers alone that wait for a row go as a batch beside them, at once: with every lane
     * taken by messages waiting for a locked row, messages to other sessions commit while that row stays locked, and
     * a message to the locked session waits in the queue, in its place.
     */
    @Test
    void messages_queued_behind_stuck_writers_alone_commit_as_a_batch_beside_them() throws Exception {
        String held = "stall-held-" + UUID.randomUUID();
        List<String> free = List.of("stall-free-1-" + UUID.randomUUID(), "stall-free-2-" + UUID.randomUUID());
        create(held);
        free.forEach(GroupCommitOverlapTest::create);
        double stallsBefore = stalls();
        List<CompletableFuture<HttpResponse<String>>> waiting = new java.util.ArrayList<>();
        try (java.sql.Connection c = connection()) {
            lockRow(c, held);
            for (int i = 0; i < 4; i++) { // one per lane
                waiting.add(post(held, "held " + i));
            }
            awaitUpsertsWaitingForTheirRow(4);
            List<CompletableFuture<HttpResponse<String>>> others =
                    free.stream().map(f -> post(f, "not held")).toList();
            assertAnswered(others);
            for (String f : free) {
                assertEquals(2, version(f));
            }
            assertTrue(waiting.stream().noneMatch(CompletableFuture::isDone), "the held session's messages wait");
            assertEquals(0.0, stalls() - stallsBefore, "nothing waited for a stall to be released");
            c.rollback();
        }
        assertAnswered(waiting);
        assertEquals(5, version(held));
        assertEquals(0.0, app.failedBatches());
    }

    /**
     * A batch that waits for a row another transaction holds holds up the messages queued behind it for
     * {@link dev.settle.ingest.accept.GroupCommit}'s stall time, not until the row is free: then they go alone.
     */
    @Test
    void messages_queued_behind_a_stuck_batch_go_alone_after_a_stall() throws Exception {
        String inLanes = "stuck-lanes-" + UUID.randomUUID();
        String inBatch = "stuck-batch-" + UUID.randomUUID();
        String free = "stuck-free-" + UUID.randomUUID();
        create(inLanes);
        create(inBatch);
        create(free);
        double stallsBefore = stalls();
        List<CompletableFuture<HttpResponse<String>>> waiting = new java.util.ArrayList<>();
        try (java.sql.Connection c = connection()) {
            lockRow(c, inLanes);
            lockRow(c, inBatch);
            for (int i = 0; i < 4; i++) { // one per lane
                waiting.add(post(inLanes, "lane " + i));
            }
            awaitUpsertsWaitingForTheirRow(4);
            waiting.add(post(inBatch, "batch")); // no lane free: a batch of one, which waits for the row
            awaitUpsertsWaitingForTheirRow(5);
            assertAnswered(List.of(post(free, "behind the batch")));
            assertEquals(2, version(free));
            assertTrue(waiting.stream().noneMatch(CompletableFuture::isDone), "the held sessions' messages wait");
            assertEquals(1.0, stalls() - stallsBefore, "the queue behind the batch was released once");
            c.rollback();
        }
        assertAnswered(waiting);
        assertEquals(5, version(inLanes));
        assertEquals(2, version(inBatch));
        assertEquals(0.0, app.failedBatches());
    }

    static void create(String session) {
        assertEquals(202, post(session, "before").join().statusCode());
    }

    static java.sql.Connection connection() throws java.sql.SQLException {
        return app.context.getBean(javax.sql.DataSource.class).getConnection();
    }

    /** Every request was answered 202 within 10 s. */
    static void assertAnswered(List<CompletableFuture<HttpResponse<String>>> requests) throws Exception {
        for (CompletableFuture<HttpResponse<String>> r : requests) {
            HttpResponse<String> answer = r.get(10, java.util.concurrent.TimeUnit.SECONDS);
            assertEquals(202, answer.statusCode(), answer.body());
        }
    }

    static double stalls() {
        return app.context
                .getBean(io.micrometer.core.instrument.MeterRegistry.class)
                .counter("settle.accept.batch.stalls")
                .count();
    }
}
