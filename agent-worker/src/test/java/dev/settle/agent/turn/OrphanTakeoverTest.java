package dev.settle.agent.turn;

import dev.settle.agent.TestAgent;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A dead worker may leave more orphaned leases than one page of a scan: a survivor's one look takes over as many as
 * it has free turn slots, not the next ones half a TTL later. Lease TTL 1 h: the scanner's scheduled looks are 30
 * minutes apart, so only the test's own look runs.
 */
class OrphanTakeoverTest {
    static TestAgent agent;

    @BeforeAll
    static void start() {
        agent = new TestAgent("orphans", Map.of("settle.lease.ttl", "1h"));
    }

    @AfterAll
    static void stop() {
        agent.close();
    }

    @Test
    void one_look_takes_over_every_orphan_a_dead_worker_left_up_to_the_free_slots() {
        int orphans = 150; // one and a half of the old fixed page (100)
        List<Long> sessions = new ArrayList<>();
        for (int i = 0; i < orphans; i++) {
            sessions.add(agent.sessionWithMessages(1));
        }
        String ids = String.join(",", sessions.stream().map(String::valueOf).toList());
        agent.jdbc.update("""
                UPDATE chat_session SET lease_token = 'dead-holder', lease_epoch = 1,
                                        lease_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND
                 WHERE id IN (%s)""".formatted(ids));

        agent.bean(OrphanedLeaseScanner.class).tick();

        await().atMost(Duration.ofSeconds(60))
                .until(() -> agent.count("SELECT COUNT(*) FROM chat_session WHERE id IN (%s) AND replied_version = 1"
                                .formatted(ids))
                        == orphans);
        assertEquals(
                orphans,
                agent.count("SELECT COUNT(*) FROM chat_session WHERE id IN (%s) AND lease_epoch = 2".formatted(ids)),
                "each taken over once");
    }
}
