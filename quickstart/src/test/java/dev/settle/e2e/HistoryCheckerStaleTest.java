package dev.settle.e2e;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.LocalDateTime;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The chaos run's judge of "one reply per burst" ({@link HistoryChecker#checkNotStale}) judges what happened, not
 * clocks: a reply that committed while a newer message's accept waited for the session row is not stale, however
 * early that message's time; a reply that committed after a newer message's accept is.
 */
class HistoryCheckerStaleTest {
    static SettleSystem settle;

    @BeforeAll
    static void start() {
        settle = new SettleSystem("stalecheck", true, Map.of(ReplyHold.PROPERTY, ReplyHold.class.getName()));
    }

    @AfterAll
    static void stop() {
        ReplyHold.GATE.open();
        settle.close();
    }

    private static HistoryChecker checker() {
        return new HistoryChecker(settle.jdbc, SettleSystem.MAX_WAIT, SettleSystem.LEASE_TTL);
    }

    private static LocalDateTime createdAt(String session, String role, long version) {
        return settle.jdbc.queryForObject("""
                SELECT m.created_at FROM chat_message m JOIN chat_session s ON s.id = m.session_id
                 WHERE s.external_id = ? AND m.role = ? AND (m.version = ? OR m.covers_version = ?)""", LocalDateTime.class, session, role, version, version);
    }

    private static int lockWaits() {
        return settle.jdbc.queryForObject(
                "SELECT COUNT(*) FROM information_schema.INNODB_TRX WHERE trx_state = 'LOCK WAIT'", Integer.class);
    }

    @Test
    void a_reply_committed_while_a_newer_accept_waited_for_the_session_row_is_not_stale() throws Exception {
        String s = SettleSystem.newSessionId();
        ReplyHold.GATE.close();
        CompletableFuture<?> second;
        try {
            settle.post(s, "first");
            await().atMost(Duration.ofSeconds(30)).until(() -> ReplyHold.GATE.waiting() == 1);
            // the reply for version 1 has passed its version check and holds the session row: the next accept waits
            second = CompletableFuture.runAsync(() -> settle.post(s, "second"));
            await().atMost(Duration.ofSeconds(10)).until(() -> lockWaits() == 1);
            // and keeps waiting, its time already taken, well past the checker's old 200 ms slack
            await().pollDelay(Duration.ofMillis(600))
                    .atMost(Duration.ofSeconds(10))
                    .until(() -> !second.isDone() && lockWaits() == 1);
        } finally {
            ReplyHold.GATE.open();
        }
        second.get(30, TimeUnit.SECONDS);
        await().atMost(Duration.ofSeconds(30)).until(() -> settle.webhooks(s).size() == 2);
        settle.awaitQuiescent(Duration.ofSeconds(30));

        assertEquals(
                List.of(1L, 2L),
                settle.jdbc.queryForList("""
                        SELECT m.covers_version FROM chat_message m JOIN chat_session s ON s.id = m.session_id
                         WHERE s.external_id = ? AND m.role = 'assistant' ORDER BY m.covers_version""", Long.class, s),
                "a reply for version 1, then one for version 2");
        // what made the old, clock-based judge call it stale: version 2's time is well before reply 1's
        assertTrue(
                createdAt(s, "user", 2).isBefore(createdAt(s, "assistant", 1).minusNanos(200_000_000)),
                "version 2 at " + createdAt(s, "user", 2) + ", reply 1 at " + createdAt(s, "assistant", 1));
        HistoryChecker checker = checker();
        checker.checkNotStale(s);
        assertEquals(List.of(), checker.violations);
    }

    @Test
    void a_reply_that_committed_after_a_newer_accept_is_stale() {
        String s = SettleSystem.newSessionId();
        settle.post(s, "first");
        await().atMost(Duration.ofSeconds(30)).until(() -> settle.webhooks(s).size() == 1);
        settle.post(s, "second");
        await().atMost(Duration.ofSeconds(30)).until(() -> settle.webhooks(s).size() == 2);
        settle.awaitQuiescent(Duration.ofSeconds(30));
        HistoryChecker honest = checker();
        honest.checkNotStale(s);
        assertEquals(List.of(), honest.violations);

        // rewrite the history: version 2's accept took the session row before reply 1's commit did
        long id = settle.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, s);
        long accepted = seq(id, "message.accepted", "$.version", "2");
        long reply = settle.jdbc.queryForObject("""
                SELECT e.seq FROM session_event e JOIN chat_message m ON m.turn_id = e.turn_id
                 WHERE e.session_id = ? AND e.type = 'reply.created' AND m.covers_version = 1""", Long.class, id);
        settle.jdbc.update("UPDATE session_event SET seq = 1000000 WHERE session_id = ? AND seq = ?", id, accepted);
        settle.jdbc.update("UPDATE session_event SET seq = ? WHERE session_id = ? AND seq = ?", accepted, id, reply);
        settle.jdbc.update("UPDATE session_event SET seq = ? WHERE session_id = ? AND seq = 1000000", reply, id);

        HistoryChecker checker = checker();
        checker.checkNotStale(s);
        assertEquals(1, checker.violations.size(), checker.violations.toString());
        assertTrue(checker.violations.getFirst().contains("stale reply"), checker.violations.toString());
    }

    private static long seq(long sessionId, String type, String path, String value) {
        return settle.jdbc.queryForObject(
                "SELECT seq FROM session_event WHERE session_id = ? AND type = ? AND JSON_VALUE(data, '" + path
                        + "') = ?",
                Long.class,
                sessionId,
                type,
                value);
    }
}
