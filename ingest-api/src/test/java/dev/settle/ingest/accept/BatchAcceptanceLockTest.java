package dev.settle.ingest.accept;

import dev.settle.ingest.IngestApp;
import dev.settle.ingest.IngestSettings;
import dev.settle.ingest.http.ApiKeyFilter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.transaction.support.TransactionTemplate;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@link BatchAcceptance#LOCK_SESSIONS} locks an existing session's row itself (not only its unique-key entry), though
 * it changes nothing in it: until the batch commits, no other writer of the session (the agent's reply commit, a
 * lease claim, another accept) gets past it, so what the batch read and decided stays true. And a batch waits for no
 * session row another writer holds (a frozen agent in its reply commit, a lease claim): it leaves that session out,
 * whose messages then go alone, and writes the others at once.
 */
class BatchAcceptanceLockTest {
    static final Duration LOCK_WAIT = Duration.ofMillis(500);
    static IngestApp app;

    @BeforeAll
    static void start() {
        app = new IngestApp("batchlock");
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    @Test
    void a_batch_leaves_out_a_session_whose_row_another_writer_holds_and_writes_the_others_without_waiting()
            throws Exception {
        String held = "held-" + UUID.randomUUID();
        String free = "free-" + UUID.randomUUID();
        String fresh = "new-" + UUID.randomUUID();
        for (String s : List.of(held, free)) {
            assertEquals(
                    202,
                    app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"hi\"}")
                            .statusCode());
        }
        BatchAcceptance batches = batches();
        DataSource ds = app.context.getBean(DataSource.class);
        try (Connection other = ds.getConnection()) {
            other.setAutoCommit(false);
            long heldPk =
                    app.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, held);
            try (Statement st = other.createStatement()) {
                // the row alone, by its primary key, as every writer of a session locks it
                st.executeQuery("SELECT id FROM chat_session WHERE id = " + heldPk + " FOR UPDATE")
                        .close();
            }
            CompletableFuture<List<BatchAcceptance.Outcome>> batch = CompletableFuture.supplyAsync(
                    () -> batches.acceptAll(List.of(item(free, "a"), item(held, "b"), item(fresh, "c")), () -> {}),
                    r -> Thread.ofPlatform().start(r));
            // answered while the row is still held: the batch did not wait for it
            List<BatchAcceptance.Outcome> outcomes = batch.get(10, TimeUnit.SECONDS);
            assertEquals(2L, outcomes.get(0).accepted().version(), outcomes.toString());
            assertTrue(outcomes.get(1).alone(), "the held session's message goes alone: " + outcomes);
            assertEquals(1L, outcomes.get(2).accepted().version(), outcomes.toString());
            other.rollback();
        }
        assertEquals(2L, messages(free), "the free session's message was stored");
        assertEquals(1L, messages(held), "nothing of the held session's message was stored");
        assertEquals(1L, messages(fresh), "the new session was created and its message stored");
    }

    private static long messages(String session) {
        return app.jdbc.queryForObject(
                "SELECT COUNT(*) FROM chat_message m JOIN chat_session s ON s.id = m.session_id WHERE s.external_id = ?",
                Long.class,
                session);
    }

    /**
     * A batch of many sessions of a small table (a young deployment's) writes their rows and no other: it neither waits
     * for, nor holds up, a session outside the batch. Its version bump once joined a derived table of parameters,
     * which MariaDB 11.4 ran as a scan of the whole table: the batch waited for a row another writer held (the server's
     * lock wait, 50 s by default, had no bound of ours) while it held every accept of its own sessions.
     */
    @Test
    void a_batch_of_most_of_a_small_table_waits_for_no_row_outside_it() throws Exception {
        String prefix = "scope-" + UUID.randomUUID() + "-";
        List<String> ids = java.util.stream.IntStream.range(0, 24)
                .mapToObj(i -> prefix + i)
                .toList();
        for (String s : ids) {
            app.jdbc.update(
                    "INSERT INTO chat_session (tenant_id, external_id, created_at) VALUES (?, ?, UTC_TIMESTAMP(6))",
                    ApiKeyFilter.DEFAULT_TENANT,
                    s);
        }
        long rows = app.jdbc.queryForObject("SELECT COUNT(*) FROM chat_session", Long.class);
        assertTrue(rows < 60, "a small table: " + rows + " rows");
        BatchAcceptance batches = batches();
        DataSource ds = app.context.getBean(DataSource.class);
        try (Connection other = ds.getConnection()) {
            other.setAutoCommit(false);
            long held = app.jdbc.queryForObject(
                    "SELECT id FROM chat_session WHERE external_id = ?", Long.class, ids.getFirst());
            try (Statement st = other.createStatement()) {
                st.executeQuery("SELECT id FROM chat_session WHERE id = " + held + " FOR UPDATE")
                        .close();
            }
            List<BatchAcceptance.Item> items =
                    ids.subList(1, ids.size()).stream().map(s -> item(s, "x")).toList();
            CompletableFuture<List<BatchAcceptance.Outcome>> batch = CompletableFuture.supplyAsync(
                    () -> batches.acceptAll(items, () -> {}),
                    r -> Thread.ofPlatform().start(r));
            List<BatchAcceptance.Outcome> outcomes = batch.get(10, TimeUnit.SECONDS);
            assertEquals(
                    items.size(),
                    outcomes.stream().filter(o -> o.accepted() != null).count(),
                    outcomes.toString());
            other.rollback();
        }
        assertEquals(
                (long) ids.size() - 1,
                app.jdbc.queryForObject(
                        "SELECT COUNT(*) FROM chat_session WHERE external_id LIKE ? AND version = 1",
                        Long.class,
                        prefix + "%"),
                "every session of the batch took version 1");
    }

    /**
     * A batch of two tenants' sessions locks exactly its own (tenant, session) pairs: not another tenant's session that
     * happens to share a session id with one of the batch's, whose writers would otherwise wait for a batch they have
     * nothing to do with.
     */
    @Test
    void a_batch_of_two_tenants_locks_its_own_sessions_and_no_other_tenants() throws Exception {
        String x = "pair-x-" + UUID.randomUUID();
        String y = "pair-y-" + UUID.randomUUID();
        String other = "pair-tenant-" + UUID.randomUUID();
        for (String tenant : List.of(ApiKeyFilter.DEFAULT_TENANT, other)) {
            for (String s : List.of(x, y)) {
                app.jdbc.update(
                        "INSERT INTO chat_session (tenant_id, external_id, created_at) VALUES (?, ?, UTC_TIMESTAMP(6))",
                        tenant,
                        s);
            }
        }
        DataSource ds = app.context.getBean(DataSource.class);
        List<String> waitedFor = new java.util.ArrayList<>();
        List<BatchAcceptance.Outcome> outcomes;
        try (Connection probe = ds.getConnection()) {
            try (Statement st = probe.createStatement()) {
                st.execute("SET SESSION innodb_lock_wait_timeout = 1");
            }
            probe.setAutoCommit(false);
            // the batch's sessions are (default, x) and (other, y); (default, y) and (other, x) are not in it
            List<BatchAcceptance.Item> items = List.of(
                    item(x, "a"),
                    new BatchAcceptance.Item(
                            other,
                            new MessageRequest(y, "b", null, "sha-b"),
                            UUID.randomUUID().toString()));
            outcomes = CompletableFuture.supplyAsync(
                            () -> batches().acceptAll(items, () -> {
                                // inside the batch's transaction, after its writes: which rows does it hold?
                                for (String[] pair : List.of(
                                        new String[] {ApiKeyFilter.DEFAULT_TENANT, x},
                                        new String[] {ApiKeyFilter.DEFAULT_TENANT, y},
                                        new String[] {other, x},
                                        new String[] {other, y})) {
                                    if (locked(probe, pair[0], pair[1])) {
                                        waitedFor.add(pair[0] + "/" + pair[1]);
                                    }
                                }
                            }),
                            r -> Thread.ofPlatform().start(r))
                    .get(30, TimeUnit.SECONDS);
            probe.rollback();
        }
        assertEquals(2, outcomes.stream().filter(o -> o.accepted() != null).count(), outcomes.toString());
        assertEquals(
                List.of(ApiKeyFilter.DEFAULT_TENANT + "/" + x, other + "/" + y),
                waitedFor,
                "the rows the batch held while it was open");
    }

    /** Whether another transaction holds the session's row: a locking read of it waits out the 1 s lock wait. */
    private static boolean locked(Connection probe, String tenant, String session) {
        try (PreparedStatement st = probe.prepareStatement(
                "SELECT id FROM chat_session WHERE tenant_id = ? AND external_id = ? FOR UPDATE")) {
            st.setString(1, tenant);
            st.setString(2, session);
            st.executeQuery().close();
            return false;
        } catch (SQLException e) {
            assertEquals(1205, e.getErrorCode(), e.toString());
            return true;
        }
    }

    private static BatchAcceptance batches() {
        return new BatchAcceptance(
                app.jdbc,
                app.context.getBean(TransactionTemplate.class),
                "queue",
                app.context.getBean(IngestSettings.class).limits(),
                LOCK_WAIT);
    }

    private static BatchAcceptance.Item item(String session, String text) {
        return new BatchAcceptance.Item(
                ApiKeyFilter.DEFAULT_TENANT,
                new MessageRequest(session, text, null, "sha-" + text),
                UUID.randomUUID().toString());
    }

    /** The locking read of a batch's existing sessions holds each row it returns until the batch commits. */
    @Test
    void the_free_rows_lock_holds_the_session_row_until_commit() throws SQLException {
        assertHeldUntilCommit("free-lock-", (batch, session) -> {
            batch.setTransactionIsolation(Connection.TRANSACTION_READ_COMMITTED);
            try (PreparedStatement lock = batch.prepareStatement(BatchAcceptance.LOCK_FREE_SESSIONS)) {
                lock.setString(1, ApiKeyFilter.DEFAULT_TENANT);
                lock.setString(2, session);
                try (java.sql.ResultSet rs = lock.executeQuery()) {
                    assertTrue(rs.next(), "the free session is returned");
                }
            }
        });
    }

    /** The upsert that creates a batch's new sessions locks an existing one's row too, until the batch commits. */
    @Test
    void the_lock_statement_holds_the_session_row_until_commit() throws SQLException {
        long pk = assertHeldUntilCommit("lock-", (batch, session) -> {
            try (PreparedStatement lock = batch.prepareStatement(BatchAcceptance.LOCK_SESSIONS)) {
                lock.setString(1, ApiKeyFilter.DEFAULT_TENANT);
                lock.setString(2, session);
                lock.executeUpdate();
            }
        });
        assertEquals(1L, app.jdbc.queryForObject("SELECT version FROM chat_session WHERE id = ?", Long.class, pk));
    }

    /** A statement run on a connection in an open transaction, naming a session by its client-facing id. */
    @FunctionalInterface
    private interface Lock {
        void run(Connection batch, String session) throws SQLException;
    }

    /**
     * Creates a session with one message, runs {@code lock} on it in an open transaction, and checks that another
     * writer of the session's row waits for that transaction until it commits, then gets through.
     *
     * @return the session's primary key
     */
    private static long assertHeldUntilCommit(String prefix, Lock lock) throws SQLException {
        String s = prefix + UUID.randomUUID();
        assertEquals(
                202,
                app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"hi\"}")
                        .statusCode());
        long pk = app.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, s);
        DataSource ds = app.context.getBean(DataSource.class);
        try (Connection batch = ds.getConnection();
                Connection other = ds.getConnection()) {
            batch.setAutoCommit(false);
            lock.run(batch, s);
            try (Statement st = other.createStatement()) {
                st.execute("SET SESSION innodb_lock_wait_timeout = 1");
                SQLException waited = assertThrows(
                        SQLException.class,
                        () -> st.executeUpdate(
                                "UPDATE chat_session SET lease_epoch = lease_epoch + 1 WHERE id = " + pk));
                assertEquals(1205, waited.getErrorCode(), waited.toString());
                batch.commit();
                assertEquals(
                        1, st.executeUpdate("UPDATE chat_session SET lease_epoch = lease_epoch + 1 WHERE id = " + pk));
                st.execute("SET SESSION innodb_lock_wait_timeout = DEFAULT");
            }
            batch.setAutoCommit(true);
        }
        return pk;
    }
}
