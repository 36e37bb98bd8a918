package dev.settle.agent.tools;

import com.zaxxer.hikari.HikariDataSource;
import dev.settle.agent.TestAgent;
import dev.settle.agent.lease.Heartbeats;
import dev.settle.agent.turn.TurnOutcome;
import dev.settle.agent.turn.TurnRunner;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A turn whose lease is lost while its thread waits inside a database call (here: for a pooled connection, as under
 * overload) ends as a lost lease: the heartbeat's interrupt breaks the wait, and whatever the call then throws is
 * the lease's loss (counted in {@code settle.lease.fenced}), not an unexpected failure of the turn. Lease TTL 1 h:
 * no scheduled renewal runs; the test runs the one round that finds the lease gone.
 */
class LeaseLossMidStatementTest {
    static final PausingTools pausing = new PausingTools();
    static final ModelDouble model = ModelDouble.start();
    static TestAgent agent;

    @BeforeAll
    static void start() {
        agent = new TestAgent(
                "leaseloss",
                Map.of(
                        "settle.llm.url", model.baseUrl(),
                        "settle.llm.max-attempts", "1",
                        "settle.lease.ttl", "1h",
                        // no interrupt polls: the turn's thread is the only one that waits for a connection
                        "settle.stream.interrupt-poll", "1h",
                        "spring.datasource.hikari.maximum-pool-size", "2"),
                pausing);
        pausing.jdbc = agent.jdbc;
    }

    @AfterAll
    static void stop() {
        agent.close();
        model.close();
    }

    @Test
    void a_turn_interrupted_while_it_waits_for_a_connection_ends_as_a_lost_lease() throws Exception {
        model.respondWith(r -> r.messages().stream().anyMatch(m -> "tool".equals(m.role()))
                ? ModelResponse.text("looked it up")
                : ModelResponse.toolCall("pausing_lookup", "{}"));
        MeterRegistry meters = agent.bean(MeterRegistry.class);
        double fenced = meters.counter("settle.lease.fenced").count();
        long session = agent.sessionWithMessages(1);
        pausing.arm();
        try (ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor()) {
            CompletableFuture<TurnOutcome> turn = CompletableFuture.supplyAsync(
                    () -> agent.bean(TurnRunner.class).run(session), threads);
            assertTrue(pausing.awaitPaused(), "the turn is inside its tool call");
            HikariDataSource pool = agent.bean(HikariDataSource.class);
            List<Connection> taken = new ArrayList<>();
            try {
                while (taken.size() < pool.getMaximumPoolSize()) {
                    taken.add(pool.getConnection());
                }
                taken.getFirst()
                        .createStatement()
                        .executeUpdate("UPDATE chat_session SET lease_token = 'someone-else' WHERE id = " + session);
                pausing.resume(); // the call returns; recording its result waits for a connection
                await().atMost(Duration.ofSeconds(10))
                        .until(() -> pool.getHikariPoolMXBean().getThreadsAwaitingConnection(), n -> n == 1);
                agent.bean(Heartbeats.class).renew(); // finds the lease gone and interrupts the turn's thread
            } finally {
                for (Connection c : taken) {
                    c.close();
                }
            }

            assertEquals(TurnOutcome.LEASE_LOST, turn.get(30, TimeUnit.SECONDS));
        }
        assertEquals(fenced + 1, meters.counter("settle.lease.fenced").count(), 0.0);
        assertEquals(
                List.of("EXECUTING"),
                agent.jdbc.queryForList(
                        "SELECT status FROM tool_execution WHERE session_id = ?", String.class, session),
                "the fenced-out holder recorded nothing more");
    }
}
