package dev.settle.agent.turn;

import dev.settle.agent.TestAgent;
import dev.settle.agent.lease.SessionLease;
import dev.settle.agent.tools.ToolExecutions;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * The agent's inserts into a table with an AUTO_INCREMENT key (a turn's begin, a tool call's record, the reply) hold
 * nothing of the table while they run: one that stalls (here: it waits for a lock on its own row's place; under load:
 * a descheduled server thread) holds up no insert of any other session. Written as {@code INSERT ... SELECT} they held
 * the table's AUTO-INC lock to their end under {@code innodb_autoinc_lock_mode = 1} (MariaDB's default), and every
 * other insert into the table queued behind it: every session's turn begins, every POST's message.
 */
class AutoIncLockScopeTest {
    /** Statements of this test's database waiting for a lock, whose text starts with {@code prefix}. */
    static final String LOCK_WAITS = """
            SELECT COUNT(*) FROM information_schema.INNODB_TRX t
              JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
             WHERE p.DB = DATABASE() AND t.trx_state = 'LOCK WAIT' AND t.trx_query LIKE ?""";

    static final String DEAD_TOKEN = "00000000-dead-4000-8000-000000000000";

    @Test
    void a_turn_begin_that_stalls_holds_up_no_other_sessions_begin() throws Exception {
        try (TestAgent agent = new TestAgent("autoincturn", Map.of())) {
            long other = agent.sessionWithMessages(1);
            long between = agent.sessionWithMessages(1);
            long stalled = agent.sessionWithMessages(1);
            for (long s : new long[] {between, stalled}) {
                agent.jdbc.update("""
                        INSERT INTO chat_turn (session_id, lease_token, lease_epoch, from_version, to_version, state,
                                               started_at)
                        VALUES (?, ?, 1, 1, 1, 'FAILED', UTC_TIMESTAMP(6))""", s, DEAD_TOKEN);
            }
            SessionLease leases = agent.bean(SessionLease.class);
            SessionLease.Lease stalledLease = leases.claim(stalled);
            SessionLease.Lease otherLease = leases.claim(other);
            Turns turns = agent.bean(Turns.class);
            try (Connection gap = agent.jdbc.getDataSource().getConnection()) {
                // the stall: the place of the stalled session's next turn in ix_turn_session is locked (a next-key
                // lock to the end of the index); the other session's turn goes before `between`'s, outside it
                gap.setAutoCommit(false);
                try (Statement st = gap.createStatement()) {
                    st.execute("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ");
                    st.executeQuery("SELECT id FROM chat_turn WHERE session_id = " + stalled + " FOR UPDATE")
                            .close();
                }
                CompletableFuture<Long> stalledBegin = async(() -> turns.begin(stalledLease, 1, 1, false));
                awaitLockWait(agent, "INSERT INTO chat_turn%", stalledBegin);
                try {
                    Long turn =
                            async(() -> turns.begin(otherLease, 1, 1, false)).get(5, TimeUnit.SECONDS);
                    assertNotNull(turn, "the other session's turn began while the stalled one waited");
                } finally {
                    gap.rollback();
                }
                assertNotNull(stalledBegin.get(10, TimeUnit.SECONDS));
            }
        }
    }

    @Test
    void a_tool_call_record_that_stalls_holds_up_no_other_sessions_record() throws Exception {
        try (TestAgent agent = new TestAgent("autoinctool", Map.of())) {
            long stalled = agent.sessionWithMessages(1);
            long other = agent.sessionWithMessages(1);
            SessionLease leases = agent.bean(SessionLease.class);
            Turns turns = agent.bean(Turns.class);
            SessionLease.Lease stalledLease = leases.claim(stalled);
            SessionLease.Lease otherLease = leases.claim(other);
            long stalledTurn = turns.begin(stalledLease, 1, 1, false);
            long otherTurn = turns.begin(otherLease, 1, 1, false);
            ToolExecutions executions = agent.bean(ToolExecutions.class);
            String key = "a".repeat(56) + Long.toHexString(stalled | 0x10000000L);
            try (Connection twin = agent.jdbc.getDataSource().getConnection()) {
                // the stall: an uncommitted row with the same key, which the stalled record's unique check waits for
                twin.setAutoCommit(false);
                try (Statement st = twin.createStatement()) {
                    st.executeUpdate("""
                            INSERT INTO tool_execution (session_id, turn_id, span_from, idem_key, call_id, tool_name,
                                                        arguments_json, ordinal, side_effect, status, lease_token,
                                                        created_at)
                            VALUES (%d, %d, 1, '%s', 'call_twin', 'create_transaction', '{}', 1, TRUE, 'PENDING',
                                    '%s', UTC_TIMESTAMP(6))""".formatted(stalled, stalledTurn, key, DEAD_TOKEN));
                }
                CompletableFuture<ToolExecutions.Execution> stalledRecord =
                        async(() -> executions.insertOrGet(new ToolExecutions.Call(
                                stalled,
                                stalledTurn,
                                1,
                                key,
                                "call_1",
                                "create_transaction",
                                "{}",
                                1,
                                true,
                                stalledLease.token())));
                awaitLockWait(agent, "INSERT INTO tool_execution%", stalledRecord);
                try {
                    // a side-effecting call of the other session: its key sorts far from the stalled one's
                    String otherKey = "f".repeat(56) + Long.toHexString(other | 0x10000000L);
                    ToolExecutions.Execution row = async(() -> executions.insertOrGet(new ToolExecutions.Call(
                                    other,
                                    otherTurn,
                                    1,
                                    otherKey,
                                    "call_1",
                                    "create_transaction",
                                    "{}",
                                    1,
                                    true,
                                    otherLease.token())))
                            .get(5, TimeUnit.SECONDS);
                    assertEquals("PENDING", row.status(), "the other session's call was recorded meanwhile");
                } finally {
                    twin.rollback();
                }
                assertEquals("call_1", stalledRecord.get(10, TimeUnit.SECONDS).callId());
            }
            assertNull(
                    executions.insertOrGet(new ToolExecutions.Call(
                            other, otherTurn, 1, null, "call_2", "lookup", "{}", 2, false, DEAD_TOKEN)),
                    "no record without the live lease");
        }
    }

    @Test
    void a_reply_insert_that_stalls_holds_up_no_message_of_another_session() throws Exception {
        try (TestAgent agent = new TestAgent("autoincreply", Map.of())) {
            long replying = agent.sessionWithMessages(1);
            long other = agent.sessionWithMessages(1);
            // the reply's id sorts before every message id of the table, the other message's after all of them: the
            // stalled unique check's next-key locks (the twin's entry and the next one) cover neither place
            String uid = "msg_!" + UUID.randomUUID().toString().substring(1);
            try (Connection twin = agent.jdbc.getDataSource().getConnection()) {
                // the stall: an uncommitted message with the reply's id, which the reply's unique check waits for
                twin.setAutoCommit(false);
                try (Statement st = twin.createStatement()) {
                    st.executeUpdate("""
                            INSERT INTO chat_message (message_uid, session_id, role, text, version, created_at)
                            VALUES ('%s', %d, 'user', 'twin', 2, UTC_TIMESTAMP(6))""".formatted(uid, replying));
                }
                // the reply of a turn that streamed nothing (turn 0, 0 deltas)
                CompletableFuture<Boolean> reply =
                        async(() -> ReplyCommit.insertReply(agent.jdbc, uid, replying, "the reply", 1, 1, 0, 0));
                awaitLockWait(agent, "INSERT INTO chat_message%", reply);
                try {
                    // what ingest does for a message of another session
                    int rows = async(() -> agent.jdbc.update(
                                    """
                                    INSERT INTO chat_message (message_uid, session_id, role, text, version, created_at)
                                    VALUES (?, ?, 'user', 'hello', 2, UTC_TIMESTAMP(6))""", "msg_~" + UUID.randomUUID().toString().substring(1), other))
                            .get(5, TimeUnit.SECONDS);
                    assertEquals(1, rows, "the other session's message was stored meanwhile");
                } finally {
                    twin.rollback();
                }
                assertEquals(true, reply.get(10, TimeUnit.SECONDS));
            }
        }
    }

    static <T> CompletableFuture<T> async(Supplier<T> work) {
        return CompletableFuture.supplyAsync(work, r -> Thread.ofPlatform().start(r));
    }

    static void awaitLockWait(TestAgent agent, String statement, CompletableFuture<?> stalled) {
        await("the stalled insert waits for its lock")
                .atMost(Duration.ofSeconds(30))
                .failFast("the insert finished instead of waiting", stalled::isDone)
                .until(() -> agent.count(LOCK_WAITS, statement) == 1);
    }
}
