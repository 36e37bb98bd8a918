package dev.settle.schema;

import com.zaxxer.hikari.HikariDataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import java.util.List;
import java.util.Map;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * The shared write path of the session event log: seqs reserved on the session row in the caller's transaction,
 * and a fenced append only under the live lease ({@link SessionRules#LEASE_OURS}).
 */
class SessionEventsTest {
    private static HikariDataSource dataSource;
    private static JdbcTemplate jdbc;
    private static TransactionTemplate tx;

    @BeforeAll
    static void open() {
        dataSource = Store.migrated("events");
        jdbc = new JdbcTemplate(dataSource);
        tx = new TransactionTemplate(new DataSourceTransactionManager(dataSource));
    }

    @AfterAll
    static void close() {
        dataSource.close();
    }

    @Test
    void events_get_consecutive_seqs_after_the_session_s_last() {
        long session = session("tok", "UTC_TIMESTAMP(6) + INTERVAL 1 HOUR");
        jdbc.update("UPDATE chat_session SET event_seq = 5 WHERE id = ?", session);
        Boolean two = tx.execute(status -> SessionEvents.append(
                jdbc,
                session,
                null,
                List.of(SessionEvents.Event.of("a", null, Map.of("n", 1)), SessionEvents.Event.of("b", 7L, Map.of()))));
        Boolean fenced = tx.execute(
                status -> SessionEvents.append(jdbc, session, "tok", SessionEvents.Event.of("c", 7L, Map.of())));
        assertThat(two).isTrue();
        assertThat(fenced).isTrue();
        assertThat(jdbc.queryForList(
                        "SELECT CONCAT(seq, type) FROM session_event WHERE session_id = ? ORDER BY seq",
                        String.class,
                        session))
                .containsExactly("6a", "7b", "8c");
        assertThat(jdbc.queryForObject("SELECT event_seq FROM chat_session WHERE id = ?", Long.class, session))
                .isEqualTo(8);
        assertThat(jdbc.queryForObject(
                        "SELECT data FROM session_event WHERE session_id = ? AND seq = 6", String.class, session))
                .isEqualTo("{\"n\":1}");
    }

    @Test
    void reserved_events_of_several_sessions_are_inserted_in_one_statement_at_their_seqs() {
        long one = session(null, "NULL");
        long two = session(null, "NULL");
        tx.executeWithoutResult(status -> SessionEvents.insertReserved(
                jdbc,
                List.of(
                        new SessionEvents.ReservedEvent(one, 1, SessionEvents.Event.of("a", null, Map.of("n", 1))),
                        new SessionEvents.ReservedEvent(two, 4, SessionEvents.Event.of("b", 7L, Map.of())),
                        new SessionEvents.ReservedEvent(one, 2, SessionEvents.Event.of("c", null, Map.of())))));
        assertThat(jdbc.queryForList(
                        "SELECT CONCAT(session_id = ?, ':', seq, type, COALESCE(turn_id, '-'), data) FROM session_event "
                                + "WHERE session_id IN (?, ?) ORDER BY session_id, seq",
                        String.class,
                        one,
                        one,
                        two))
                .containsExactly("1:1a-{\"n\":1}", "1:2c-{}", "0:4b7{}");
        assertThatIllegalStateException()
                .isThrownBy(() -> SessionEvents.insertReserved(
                        jdbc,
                        List.of(new SessionEvents.ReservedEvent(one, 3, SessionEvents.Event.of("x", null, Map.of())))));
    }

    @Test
    void a_fenced_append_writes_nothing_without_the_live_lease() {
        long expired = session("tok", "UTC_TIMESTAMP(6) - INTERVAL 1 MICROSECOND");
        long someoneElses = session("other", "UTC_TIMESTAMP(6) + INTERVAL 1 HOUR");
        long released = session(null, "NULL");
        for (long session : new long[] {expired, someoneElses, released}) {
            Boolean appended = tx.execute(
                    status -> SessionEvents.append(jdbc, session, "tok", SessionEvents.Event.of("x", null, Map.of())));
            assertThat(appended).isFalse();
            assertThat(jdbc.queryForObject(
                            "SELECT COUNT(*) FROM session_event WHERE session_id = ?", Long.class, session))
                    .isZero();
            assertThat(jdbc.queryForObject("SELECT event_seq FROM chat_session WHERE id = ?", Long.class, session))
                    .isZero();
        }
    }

    @Test
    void appending_outside_a_transaction_is_refused() {
        long session = session(null, "NULL");
        assertThatIllegalStateException()
                .isThrownBy(
                        () -> SessionEvents.append(jdbc, session, null, SessionEvents.Event.of("x", null, Map.of())));
        assertThatIllegalStateException()
                .isThrownBy(() ->
                        SessionEvents.insertReserved(jdbc, session, 1, SessionEvents.Event.of("x", null, Map.of())));
    }

    private static long session(String token, String expiresSql) {
        long id = jdbc.queryForObject("SELECT COALESCE(MAX(id), 0) + 1 FROM chat_session", Long.class);
        jdbc.update(
                "INSERT INTO chat_session (id, external_id, lease_token, lease_expires_at, created_at) VALUES (?, ?, ?, "
                        + expiresSql + ", UTC_TIMESTAMP(6))",
                id,
                "events-" + id,
                token);
        return id;
    }
}
