package dev.settle.e2e;

import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;

import java.math.BigDecimal;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** An agent worker killed (SIGKILL, its own JVM) mid-turn: another instance takes over after the TTL. */
class TakeoverTest {
    static SettleSystem settle;

    @BeforeAll
    static void start() {
        // the reaper must not fail the victim's call before the survivor (slow to start on a loaded machine) takes it
        settle = new SettleSystem("takeover", false, Map.of("settle.agent.tool-timeout", "60s"));
    }

    @AfterAll
    static void stop() {
        settle.close();
    }

    @Test
    void an_agent_killed_mid_turn_is_replaced_after_the_ttl_and_exactly_one_reply_is_delivered() throws Exception {
        String s = SettleSystem.newSessionId();
        String marker = "crash-" + s;
        settle.model.respondWith(r -> !r.body().contains(marker)
                ? ModelDouble.echo(r)
                : settle.modelCallsMentioning(marker) <= 1
                        ? ModelResponse.hang()
                        : ModelResponse.text("after takeover"));

        Map<String, Object> props = new HashMap<>(settle.sharedProperties());
        props.put("spring.kafka.consumer.group-id", settle.agentGroup());
        props.put("logging.file.name", "");
        try (AgentProcess victim = new AgentProcess(props)) {
            await("the victim agent started")
                    .atMost(Duration.ofSeconds(90))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> victim.logContains("Started AgentWorkerApplication"));
            await("the victim joined the group")
                    .atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> victim.logContains("partitions assigned"));
            settle.post(s, marker);
            await("the victim is generating")
                    .atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> settle.modelCallsMentioning(marker) == 1);
            assertEquals(
                    "generating", settle.get("/v1/sessions/" + s).get("state").asString());

            ConfigurableApplicationContext survivor = settle.startAgent();
            victim.kill();
            Instant killedAt = Instant.now();
            java.time.LocalDateTime victimExpiry = settle.jdbc.queryForObject(
                    "SELECT lease_expires_at FROM chat_session WHERE external_id = ?",
                    java.time.LocalDateTime.class,
                    s);
            settle.model.releaseHangs();

            await("one reply after takeover")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> settle.webhooks(s).size() == 1);
            Duration takeover =
                    Duration.between(killedAt, settle.webhooks(s).getFirst().receivedAt());
            settle.awaitQuiescent(Duration.ofSeconds(60)); // then no second reply or delivery can come
            assertEquals(1, settle.webhooks(s).size());
            assertEquals(
                    "after takeover",
                    settle.webhooks(s).getFirst().json().get("data").get("text").asString());
            assertEquals(1, settle.replies(s).size());
            assertEquals(
                    List.of("FAILED", "COMMITTED"),
                    settle.turnStates(s),
                    "the abandoned turn is closed by the successor");
            assertEquals(
                    2,
                    settle.jdbc.queryForObject(
                            "SELECT lease_epoch FROM chat_session WHERE external_id = ?", Long.class, s));
            assertTrue(takeover.compareTo(SettleSystem.LEASE_TTL.plusSeconds(10)) < 0, "takeover took " + takeover);
            // not before the TTL: the successor's turn began no earlier than the dead holder's lease expired (both
            // on the database clock; a survivor that claimed early would have overwritten the expiry read above
            // with its own, later than its turn's start)
            java.time.LocalDateTime successorStarted =
                    settle.jdbc.queryForObject("""
                    SELECT MAX(t.started_at) FROM chat_turn t JOIN chat_session s ON s.id = t.session_id
                     WHERE s.external_id = ?""", java.time.LocalDateTime.class, s);
            assertTrue(
                    !successorStarted.isBefore(victimExpiry),
                    "the successor began at " + successorStarted + ", before the victim's lease expired at "
                            + victimExpiry);
            System.out.println("takeover after kill -9: " + takeover.toMillis() + " ms (lease TTL "
                    + SettleSystem.LEASE_TTL.toMillis() + " ms)");
            settle.launcher.stop(survivor);
        }
        assertEquals(
                0,
                settle.receiver.deliveries().stream()
                        .filter(WebhookReceiver.Delivery::acknowledged)
                        .filter(d -> d.body().contains(marker) && !d.body().contains("after takeover"))
                        .count());
    }

    @Test
    void an_agent_killed_inside_the_tool_transaction_leaves_no_effect_and_the_successor_books_exactly_once()
            throws Exception {
        String s = SettleSystem.newSessionId();
        String text = "dinner 42 " + s;
        settle.model.respondWith(r -> !r.body().contains(text)
                ? ModelDouble.echo(r)
                : r.messages().stream().noneMatch(m -> "tool".equals(m.role()))
                        ? ModelResponse.toolCall("create_transaction", "{\"amount\":42,\"category\":\"food\"}")
                        : ModelResponse.text("Booked dinner."));
        Map<String, Object> props = new HashMap<>(settle.sharedProperties());
        props.put("spring.kafka.consumer.group-id", settle.agentGroup());
        // blocker: every gap of ledger_entry held, so the victim's INSERT will wait inside its tool transaction
        try (AgentProcess victim = new AgentProcess(props);
                Connection blocker = settle.holdLedgerGaps()) {
            await("the victim agent started")
                    .atMost(Duration.ofSeconds(90))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> victim.logContains("partitions assigned"));
            settle.post(s, text);
            await("the victim is inside the tool transaction")
                    .atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> settle.jdbc.queryForObject(
                                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'INSERT INTO ledger_entry%'",
                                    Integer.class)
                            == 1);
            assertEquals("EXECUTING", settle.jdbc.queryForObject("""
                    SELECT t.status FROM tool_execution t JOIN chat_session s ON s.id = t.session_id
                     WHERE s.external_id = ?""", String.class, s));

            victim.kill();
            blocker.rollback();
            ConfigurableApplicationContext survivor = settle.startAgent();
            await("one reply after takeover")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> settle.webhooks(s).size() == 1);
            settle.awaitQuiescent(Duration.ofSeconds(60)); // then no second booking or reply can come
            assertEquals(1, settle.jdbc.queryForObject("""
                    SELECT COUNT(*) FROM ledger_entry l JOIN chat_session s ON s.id = l.session_id
                     WHERE s.external_id = ?""", Integer.class, s), "exactly one ledger row");
            assertEquals(List.of("COMPLETED"), settle.jdbc.queryForList("""
                    SELECT t.status FROM tool_execution t JOIN chat_session s ON s.id = t.session_id
                     WHERE s.external_id = ?""", String.class, s));
            assertEquals(List.of("FAILED", "COMMITTED"), settle.turnStates(s));
            assertEquals(
                    "Booked dinner.",
                    settle.webhooks(s).getFirst().json().get("data").get("text").asString());
            settle.launcher.stop(survivor);
        }
    }

    @Test
    void
            an_agent_killed_after_its_ledger_insert_before_completed_leaves_no_effect_and_the_successor_books_exactly_once()
                    throws Exception {
        String s = SettleSystem.newSessionId();
        String text = "supper 43 " + s;
        settle.model.respondWith(r -> !r.body().contains(text)
                ? ModelDouble.echo(r)
                : r.messages().stream().noneMatch(m -> "tool".equals(m.role()))
                        ? ModelResponse.toolCall("create_transaction", "{\"amount\":43,\"category\":\"food\"}")
                        : ModelResponse.text("Booked supper."));
        Map<String, Object> props = new HashMap<>(settle.sharedProperties());
        props.put("spring.kafka.consumer.group-id", settle.agentGroup());
        String url = (String) settle.sharedProperties().get("spring.datasource.url");
        try (AgentProcess victim = new AgentProcess(props);
                // 1. every gap of ledger_entry held: the victim's INSERT waits inside its tool transaction
                Connection ledgerBlocker = settle.holdLedgerGaps();
                Connection rowBlocker = DriverManager.getConnection(url, "root", "");
                Connection dirty = DriverManager.getConnection(url, "root", "")) {
            await("the victim agent started")
                    .atMost(Duration.ofSeconds(90))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> victim.logContains("partitions assigned"));
            settle.post(s, text);
            await("the victim's ledger INSERT waits")
                    .atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> settle.jdbc.queryForObject(
                                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'INSERT INTO ledger_entry%'",
                                    Integer.class)
                            == 1);
            // 2. lock the session's row, then let the INSERT through: the victim's next statement, the fence before
            //    its commit (its tool.completed event's seq reservation, guarded by its live lease), waits behind
            //    this lock
            long execution = settle.jdbc.queryForObject("""
                    SELECT t.id FROM tool_execution t JOIN chat_session s ON s.id = t.session_id
                     WHERE s.external_id = ? AND t.status = 'EXECUTING'""", Long.class, s);
            rowBlocker.setAutoCommit(false);
            try (Statement st = rowBlocker.createStatement()) {
                st.executeQuery("SELECT id FROM chat_session WHERE id = " + settle.sessionPk(s) + " FOR UPDATE")
                        .close();
            }
            ledgerBlocker.rollback();
            await("the victim's fence waits after its INSERT")
                    .atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> settle.jdbc.queryForObject(
                                    "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'UPDATE chat_session s SET event_seq%lease_token%'",
                                    Integer.class)
                            == 1);
            dirty.setTransactionIsolation(Connection.TRANSACTION_READ_UNCOMMITTED);
            try (Statement st = dirty.createStatement();
                    ResultSet rs =
                            st.executeQuery("SELECT COUNT(*) FROM ledger_entry WHERE execution_id = " + execution)) {
                rs.next();
                assertEquals(1, rs.getInt(1), "the victim's ledger row is written, not committed");
            }

            victim.kill();
            rowBlocker.rollback();
            ConfigurableApplicationContext survivor = settle.startAgent();
            await("one reply after takeover")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> settle.webhooks(s).size() == 1);
            settle.awaitQuiescent(Duration.ofSeconds(60)); // then no second booking or reply can come
            assertEquals(
                    List.of(new BigDecimal("43.00")),
                    settle.jdbc.queryForList("""
                    SELECT l.amount FROM ledger_entry l JOIN chat_session s ON s.id = l.session_id
                     WHERE s.external_id = ?""", BigDecimal.class, s),
                    "exactly one ledger row");
            assertEquals(List.of("COMPLETED"), settle.jdbc.queryForList("""
                    SELECT t.status FROM tool_execution t JOIN chat_session s ON s.id = t.session_id
                     WHERE s.external_id = ?""", String.class, s));
            assertEquals(List.of("FAILED", "COMMITTED"), settle.turnStates(s));
            assertEquals(
                    "Booked supper.",
                    settle.webhooks(s).getFirst().json().get("data").get("text").asString());
            settle.launcher.stop(survivor);
        }
    }
}
