package dev.settle.ingest.accept;

import dev.settle.ingest.IngestApp;
import dev.settle.ingest.IngestSettings;
import dev.settle.ingest.http.ApiKeyFilter;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DataSourceTransactionManager;
import org.springframework.transaction.support.TransactionTemplate;

import javax.sql.DataSource;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLNonTransientConnectionException;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;

/**
 * A POST whose commit went through but whose connection died before the acknowledgement, and whose look-up by
 * message id then died too, is never answered "nothing was accepted" (the client's retry would store the message a
 * second time): the look-up is retried like the write, and only a look-up that never answers gives up, saying the
 * message may have been stored. Faults are injected on the real MariaDB connections: the commit runs, then the
 * driver "loses" its answer.
 */
class LostCommitAckTest {
    static IngestApp app;

    @BeforeAll
    static void start() {
        app = new IngestApp("lostack", Map.of());
    }

    @AfterAll
    static void stop() {
        app.close();
    }

    /** Commits that run and then fail as if the connection died; look-ups by message id that fail outright. */
    static final class Faults {
        final AtomicInteger commitsToLose = new AtomicInteger();
        final AtomicInteger lookupsToFail = new AtomicInteger();
        final AtomicInteger lost = new AtomicInteger();
        final AtomicInteger failed = new AtomicInteger();
        /** statements that start with {@link #failingSql} and fail as a deadlock victim would */
        final AtomicInteger statementsToFail = new AtomicInteger();

        final AtomicInteger statementsFailed = new AtomicInteger();
        volatile String failingSql = "\u0000";

        DataSource around(DataSource real) {
            return (DataSource) Proxy.newProxyInstance(
                    getClass().getClassLoader(), new Class<?>[] {DataSource.class}, (proxy, method, args) -> {
                        Object result = invoke(real, method, args);
                        return result instanceof Connection c ? connection(c) : result;
                    });
        }

        private Connection connection(Connection real) {
            return (Connection) Proxy.newProxyInstance(
                    getClass().getClassLoader(), new Class<?>[] {Connection.class}, (proxy, method, args) -> {
                        if (method.getName().equals("commit")) {
                            invoke(real, method, args);
                            if (commitsToLose.getAndDecrement() > 0) {
                                lost.incrementAndGet();
                                throw new SQLNonTransientConnectionException(
                                        "injected: the commit's answer was lost", "08S01");
                            }
                            return null;
                        }
                        if (method.getName().equals("prepareStatement")
                                && args[0] instanceof String sql
                                && sql.equals(MessageAcceptance.BY_UID)
                                && lookupsToFail.getAndDecrement() > 0) {
                            failed.incrementAndGet();
                            throw new SQLNonTransientConnectionException(
                                    "injected: the look-up's connection died", "08S01");
                        }
                        if (method.getName().equals("prepareStatement")
                                && args[0] instanceof String sql
                                && sql.startsWith(failingSql)
                                && statementsToFail.getAndDecrement() > 0) {
                            statementsFailed.incrementAndGet();
                            throw new java.sql.SQLTransactionRollbackException(
                                    "injected: deadlock found when trying to get lock", "40001", 1213);
                        }
                        return invoke(real, method, args);
                    });
        }

        private static Object invoke(Object target, java.lang.reflect.Method method, Object[] args) throws Throwable {
            try {
                return method.invoke(target, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }
    }

    static MessageAcceptance acceptance(Faults faults) {
        DataSource ds = faults.around(app.context.getBean(DataSource.class));
        return new MessageAcceptance(
                new JdbcTemplate(ds),
                new TransactionTemplate(new DataSourceTransactionManager(ds)),
                app.context.getBean(IngestSettings.class));
    }

    static int stored(String session) {
        return app.context.getBean(JdbcTemplate.class).queryForObject("""
                SELECT COUNT(*) FROM chat_message m JOIN chat_session s ON s.id = m.session_id WHERE s.external_id = ?""", Integer.class, session);
    }

    @Test
    void a_lost_commit_ack_followed_by_failed_lookups_is_still_answered_as_accepted_once() {
        Faults faults = new Faults();
        faults.commitsToLose.set(1);
        faults.lookupsToFail.set(2);
        String s = "lostack-" + UUID.randomUUID();
        MessageAcceptance.Accepted a = acceptance(faults)
                .accept(ApiKeyFilter.DEFAULT_TENANT, new MessageRequest(s, "hello", null, "sha-" + s));
        assertEquals(1, faults.lost.get());
        assertEquals(2, faults.failed.get());
        assertEquals(1, a.version());
        assertEquals(1, stored(s), "stored once, and the caller is told so");
    }

    @Test
    void when_no_lookup_ever_answers_the_caller_is_told_the_outcome_is_unknown_not_that_nothing_was_stored() {
        Faults faults = new Faults();
        faults.commitsToLose.set(1);
        faults.lookupsToFail.set(Integer.MAX_VALUE);
        String s = "lostack-" + UUID.randomUUID();
        assertThrows(
                MessageAcceptance.OutcomeUnknown.class,
                () -> acceptance(faults)
                        .accept(ApiKeyFilter.DEFAULT_TENANT, new MessageRequest(s, "hello", null, "sha-" + s)));
        assertEquals(1, stored(s), "it was stored: the answer must not say otherwise");
    }
}
