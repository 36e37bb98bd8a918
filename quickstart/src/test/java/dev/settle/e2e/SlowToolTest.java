package dev.settle.e2e;

import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelRequest;
import dev.settle.testsupport.ModelResponse;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.math.BigDecimal;
import java.net.http.HttpResponse;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A side-effecting tool that runs for three lease TTLs while the same agent worker holds 50 other leases: no lease
 * is lost, nothing is fenced, the effect commits once, and POSTs to every one of those sessions are accepted while
 * the tool is still inside its call. The tool is held inside its transaction by a lock on every gap of
 * ledger_entry, released only after the POSTs were answered.
 */
class SlowToolTest {
    static SettleSystem settle;

    @BeforeAll
    static void start() {
        // the 50 other turns wait in the model for the whole test: no model timeout may end one of them
        settle = new SettleSystem("slowtool", true, java.util.Map.of("settle.llm.timeout", "300s"));
    }

    @AfterAll
    static void stop() {
        settle.close();
    }

    static long toolResults(ModelRequest r) {
        return r.messages().stream().filter(m -> "tool".equals(m.role())).count();
    }

    static String lastUserMessage(ModelRequest r) {
        return r.messages().stream()
                .filter(m -> "user".equals(m.role()))
                .map(m -> m.content())
                .reduce((a, b) -> b)
                .orElse("");
    }

    int ledgerInsertsWaiting() {
        return settle.jdbc.queryForObject(
                "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'INSERT INTO ledger_entry%'",
                Integer.class);
    }

    double meter(String name, String... tags) {
        Counter c =
                settle.agent.getBean(MeterRegistry.class).find(name).tags(tags).counter();
        return c == null ? 0 : c.count();
    }

    @Test
    void a_tool_three_ttls_long_loses_no_lease_fences_nothing_books_once_and_every_post_is_accepted_meanwhile()
            throws Exception {
        String slow = SettleSystem.newSessionId();
        String booking = "dinner 9 " + slow;
        List<String> others = new ArrayList<>();
        for (int i = 0; i < 50; i++) {
            others.add(SettleSystem.newSessionId());
        }
        settle.model.respondWith(r -> r.body().contains("hold-")
                ? ModelResponse.hang()
                : !r.body().contains(booking)
                        ? ModelDouble.echo(r)
                        : toolResults(r) == 0 && lastUserMessage(r).equals(booking)
                                ? ModelResponse.toolCall("create_transaction", "{\"amount\":9,\"category\":\"food\"}")
                                : ModelResponse.text("Booked dinner."));
        List<String> all = new ArrayList<>(others);
        all.add(slow);
        try (Connection blocker = settle.holdLedgerGaps()) {
            for (String s : others) {
                settle.post(s, "hold-" + s);
            }
            await("50 turns in flight, each holding its lease")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> settle.modelCallsMentioning("hold-") == 50);
            settle.post(slow, booking);
            await("the tool is inside its call")
                    .atMost(Duration.ofSeconds(30))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() -> ledgerInsertsWaiting() == 1);
            String ids = String.join(
                    ",",
                    all.stream().map(s -> Long.toString(settle.sessionPk(s))).toList());
            assertEquals(
                    51,
                    settle.jdbc.queryForObject(
                            "SELECT COUNT(*) FROM chat_session WHERE id IN (" + ids
                                    + ") AND lease_epoch = 1 AND lease_expires_at > UTC_TIMESTAMP(6)",
                            Integer.class),
                    "51 leases held");

            long ttlMicros = SettleSystem.LEASE_TTL.toNanos() / 1000;
            await("the tool has run for three lease TTLs")
                    .atMost(Duration.ofSeconds(60))
                    .pollInterval(Duration.ofMillis(20))
                    .pollInSameThread()
                    .until(() ->
                            settle.jdbc.queryForObject("""
                            SELECT COUNT(*) FROM tool_execution
                             WHERE session_id = ? AND status = 'EXECUTING' AND started_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND""", Integer.class, settle.sessionPk(slow), 3 * ttlMicros) == 1);
            assertEquals(1, ledgerInsertsWaiting(), "the tool is still inside its call");

            // a POST to every session, the slow one included: each accepted while the tool still runs
            List<Future<HttpResponse<String>>> posts = new ArrayList<>();
            try (ExecutorService clients = Executors.newFixedThreadPool(8)) {
                for (String s : all) {
                    posts.add(clients.submit(() -> settle.postRaw(s, "and one more thing")));
                }
                for (int i = 0; i < posts.size(); i++) {
                    assertEquals(202, posts.get(i).get(20, TimeUnit.SECONDS).statusCode(), all.get(i));
                }
            }
            assertEquals(1, ledgerInsertsWaiting(), "every POST was answered while the tool was still inside its call");
            assertEquals(
                    51,
                    settle.jdbc.queryForObject(
                            "SELECT COUNT(*) FROM chat_session WHERE id IN (" + ids
                                    + ") AND lease_epoch = 1 AND lease_expires_at > UTC_TIMESTAMP(6)",
                            Integer.class),
                    "no lease lost or taken over: every one renewed through three TTLs");
            assertEquals(0, meter("settle.lease.fenced"));
            blocker.rollback();
        }
        await("the slow session's two messages answered")
                .atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(slow).size() == 2);
        assertEquals(
                List.of(new BigDecimal("9.00")),
                settle.jdbc.queryForList("""
                SELECT l.amount FROM ledger_entry l JOIN chat_session s ON s.id = l.session_id
                 WHERE s.external_id = ?""", BigDecimal.class, slow),
                "the effect committed exactly once");
        assertEquals(List.of("COMPLETED"), settle.jdbc.queryForList("""
                SELECT t.status FROM tool_execution t JOIN chat_session s ON s.id = t.session_id
                 WHERE s.external_id = ?""", String.class, slow));
        assertEquals(List.of("COMMITTED", "COMMITTED"), settle.turnStates(slow), "no turn fenced out or retried");
        assertEquals(0, meter("settle.lease.fenced"));
        assertEquals(0, meter("settle.turns", "outcome", "lease-lost"));
        settle.model.releaseHangs();
    }
}
