package dev.settle.ingest.accept;

import dev.settle.ingest.IngestApp;
import dev.settle.ingest.http.ApiKeyFilter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import javax.sql.DataSource;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * {@link BatchAcceptance#LOCK_SESSIONS} locks an existing session's row itself (not only its unique-key entry), though
 * it changes nothing in it: until the batch commits, no other writer of the session (the agent's reply commit, a
 * lease claim, another accept) gets past it, so what the batch read and decided stays true.
 */
class BatchAcceptanceLockTest {
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
    void the_lock_statement_holds_the_session_row_until_commit() throws SQLException {
        String s = "lock-" + UUID.randomUUID();
        assertEquals(
                202,
                app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"hi\"}")
                        .statusCode());
        long pk = app.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, s);
        DataSource ds = app.context.getBean(DataSource.class);
        try (Connection batch = ds.getConnection();
                Connection other = ds.getConnection()) {
            batch.setAutoCommit(false);
            try (PreparedStatement lock = batch.prepareStatement(BatchAcceptance.LOCK_SESSIONS)) {
                lock.setString(1, ApiKeyFilter.DEFAULT_TENANT);
                lock.setString(2, s);
                lock.executeUpdate();
            }
            try (Statement st = other.createStatement()) {
                st.execute("SET SESSION innodb_lock_wait_timeout = 1");
                SQLException waited = assertThrows(
                        SQLException.class,
                        () -> st.executeUpdate(
                                "UPDATE chat_session SET replied_version = replied_version + 0, lease_epoch = lease_epoch + 1 WHERE id = "
                                        + pk));
                assertEquals(1205, waited.getErrorCode(), waited.toString());
                batch.commit();
                assertEquals(
                        1, st.executeUpdate("UPDATE chat_session SET lease_epoch = lease_epoch + 1 WHERE id = " + pk));
                st.execute("SET SESSION innodb_lock_wait_timeout = DEFAULT");
            }
            batch.setAutoCommit(true);
        }
        assertEquals(1L, app.jdbc.queryForObject("SELECT version FROM chat_session WHERE id = ?", Long.class, pk));
    }
}
