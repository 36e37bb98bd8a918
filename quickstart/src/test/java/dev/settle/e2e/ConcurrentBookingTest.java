package dev.settle.e2e;

import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.kafka.config.KafkaListenerEndpointRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** 100 sessions booking at once across two agent-worker instances: ledger rows equal intended calls. */
class ConcurrentBookingTest {
    static SettleSystem settle;
    static List<ConfigurableApplicationContext> agents;

    @BeforeAll
    static void start() {
        settle = new SettleSystem("booking");
        agents = List.of(settle.agent, settle.startAgent());
    }

    /** Partitions of the session-ready topic this instance consumes now. */
    static int assignedPartitions(ConfigurableApplicationContext agent) {
        int n = 0;
        for (MessageListenerContainer c :
                agent.getBean(KafkaListenerEndpointRegistry.class).getListenerContainers()) {
            n += c.getAssignedPartitions() == null
                    ? 0
                    : c.getAssignedPartitions().size();
        }
        return n;
    }

    /** Turns this instance committed (its own meter registry). */
    static long committedTurns(ConfigurableApplicationContext agent) {
        Counter c = agent.getBean(MeterRegistry.class)
                .find("settle.turns")
                .tag("outcome", "committed")
                .counter();
        return c == null ? 0 : (long) c.count();
    }

    @AfterAll
    static void stop() {
        settle.close();
    }

    @Test
    void one_hundred_sessions_booking_concurrently_write_exactly_the_intended_rows() throws Exception {
        Random random = new Random(7);
        int sessions = 100;
        List<String> ids = new ArrayList<>();
        List<Integer> bookings = new ArrayList<>();
        for (int i = 0; i < sessions; i++) {
            ids.add(SettleSystem.newSessionId());
            bookings.add(1 + random.nextInt(3)); // 1-3 identical taxi rides in one message
        }
        settle.model.respondWith(r -> {
            int i = ids.indexOf(r.messages().stream()
                    .filter(m -> "user".equals(m.role()))
                    .map(m -> m.content())
                    .reduce((a, b) -> b)
                    .orElse("")
                    .replace("taxi rides ", ""));
            if (i < 0) {
                return ModelDouble.echo(r);
            }
            if (r.messages().stream().anyMatch(m -> "tool".equals(m.role()))) {
                return ModelResponse.text("Booked.");
            }
            List<dev.settle.testsupport.ToolCall> calls = new ArrayList<>();
            for (int k = 0; k < bookings.get(i); k++) {
                calls.add(new dev.settle.testsupport.ToolCall(
                        "t" + k, "create_transaction", "{\"amount\":" + (i + 1) + ",\"category\":\"transport\"}"));
            }
            return ModelResponse.toolCalls(calls).delay(Duration.ofMillis(100 + random.nextInt(200)));
        });
        await("both instances consume their share of the partitions")
                .atMost(Duration.ofSeconds(60))
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> assignedPartitions(agents.get(0)) > 0
                        && assignedPartitions(agents.get(1)) > 0
                        && assignedPartitions(agents.get(0)) + assignedPartitions(agents.get(1))
                                == dev.settle.contracts.Topics.PARTITIONS);
        try (ExecutorService clients = Executors.newFixedThreadPool(16)) {
            List<Future<?>> posts = new ArrayList<>();
            for (String s : ids) {
                posts.add(clients.submit(() -> settle.post(s, "taxi rides " + s)));
            }
            for (Future<?> f : posts) {
                f.get();
            }
        }
        await("every session answered")
                .atMost(Duration.ofSeconds(120))
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> ids.stream().allMatch(s -> settle.replies(s).size() == 1));
        int intended = bookings.stream().mapToInt(Integer::intValue).sum();
        assertEquals(intended, settle.jdbc.queryForObject("""
                SELECT COUNT(*) FROM ledger_entry l JOIN chat_session s ON s.id = l.session_id
                 WHERE s.external_id LIKE 'e2e-%'""", Integer.class));
        for (int i = 0; i < sessions; i++) {
            String s = ids.get(i);
            assertEquals(bookings.get(i), settle.jdbc.queryForObject("""
                    SELECT COUNT(*) FROM ledger_entry l JOIN chat_session s ON s.id = l.session_id
                     WHERE s.external_id = ? AND l.amount = ?""", Integer.class, s, i + 1), s);
            assertEquals(List.of("COMMITTED"), settle.turnStates(s), s);
        }
        // both instances did real work: each committed some of the 100 turns, together exactly 100
        await("every committed turn counted")
                .atMost(Duration.ofSeconds(10))
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> committedTurns(agents.get(0)) + committedTurns(agents.get(1)) == sessions);
        long first = committedTurns(agents.get(0));
        long second = committedTurns(agents.get(1));
        System.out.println("committed turns per instance: " + first + " + " + second);
        assertEquals(sessions, first + second);
        assertTrue(first > 0 && second > 0, "both instances ran turns: " + first + " + " + second);
    }
}
