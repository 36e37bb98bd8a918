package dev.settle.e2e;

import dev.settle.testsupport.SqlTrace;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.stream.Collectors;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * What one reply costs in SQL across the three applications (issue 18's budget: ≤ 25 statements, ≤ 5
 * transactions), counted statement by statement with {@link SqlTrace}: a single message, no tools, a model that
 * answers at once. A statement is the reply's unless a background loop ran it and it found nothing (an idle poll)
 * or it only looked ahead (the timer firer's sleep length): those cost per second, not per reply, and are
 * reported apart. A transaction is a COMMIT, or a write that committed on its own (autocommit, no START TRANSACTION).
 */
class ReplyCostTest {
    static SettleSystem settle;

    @BeforeAll
    static void start() {
        settle = SettleSystem.traced("cost", Map.of());
    }

    @AfterAll
    static void stop() {
        settle.close();
    }

    @Test
    void one_reply_costs_its_budget_of_statements_and_transactions() {
        String warm = SettleSystem.newSessionId(); // the first reply of a JVM also fills caches
        settle.post(warm, "warm up");
        await().atMost(Duration.ofSeconds(30)).until(() -> settle.webhooks(warm).size() == 1);
        settle.awaitQuiescent(Duration.ofSeconds(30));

        String test = Thread.currentThread().getName();
        SqlTrace.start();
        String s = SettleSystem.newSessionId();
        settle.post(s, "hello");
        await().atMost(Duration.ofSeconds(30))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        settle.awaitQuiescent(Duration.ofSeconds(30));
        List<SqlTrace.Statement> all = SqlTrace.stop().stream()
                .filter(st -> !st.thread().equals(test) && !st.thread().startsWith("awaitility"))
                .toList();
        List<SqlTrace.Statement> reply =
                all.stream().filter(st -> !st.idlePoll()).toList();

        Map<String, List<SqlTrace.Statement>> byApp = reply.stream()
                .collect(Collectors.groupingBy(SqlTrace.Statement::app, TreeMap::new, Collectors.toList()));
        StringBuilder report = new StringBuilder("one reply, statement by statement:\n");
        byApp.forEach((app, list) -> {
            report.append("== ")
                    .append(app)
                    .append(": ")
                    .append(list.size())
                    .append(" statements, ")
                    .append(transactions(list))
                    .append(" transactions\n");
            list.forEach(st -> report.append("   ")
                    .append(st.endsTransaction() ? "T " : "  ")
                    .append(st.shape(), 0, Math.min(140, st.shape().length()))
                    .append('\n'));
        });
        report.append("idle polls while it ran (not counted): ")
                .append(all.size() - reply.size())
                .append('\n');
        System.out.println(report);

        assertEquals(6, byApp.get("ingest-api").size(), report.toString());
        assertEquals(1, transactions(byApp.get("ingest-api")), report.toString());
        assertEquals(7, byApp.get("debounce-worker").size(), report.toString());
        assertEquals(3, transactions(byApp.get("debounce-worker")), report.toString());
        assertEquals(13, byApp.get("agent-worker").size(), report.toString());
        assertEquals(4, transactions(byApp.get("agent-worker")), report.toString());
    }

    static long transactions(List<SqlTrace.Statement> statements) {
        return statements.stream().filter(SqlTrace.Statement::endsTransaction).count();
    }
}
