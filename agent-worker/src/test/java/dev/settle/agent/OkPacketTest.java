package dev.settle.agent;

import dev.settle.agent.lease.SessionLease;
import dev.settle.schema.OkPacket;
import org.junit.jupiter.api.Test;

import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * A claim and an event-seq reservation are one round trip each: the UPDATE's {@code LAST_INSERT_ID(expr)} comes
 * back in its OK packet. Pins that Connector/J hands the value over (not the fallback query), and that the lease
 * epochs it reports are the ones stored.
 */
class OkPacketTest {

    @Test
    void an_update_reports_the_value_it_set_with_last_insert_id() {
        try (TestAgent agent = new TestAgent("okpacket", Map.of())) {
            long session = agent.sessionWithMessages(1);
            agent.jdbc.update("UPDATE chat_session SET event_seq = 41 WHERE id = ?", session);
            OkPacket.Reserved r = OkPacket.update(
                    agent.jdbc,
                    "UPDATE chat_session SET event_seq = LAST_INSERT_ID(event_seq + ?) WHERE id = ?",
                    3,
                    session);
            assertEquals(new OkPacket.Reserved(1, 44), r);
            assertEquals(
                    new OkPacket.Reserved(0, 0),
                    OkPacket.update(
                            agent.jdbc,
                            "UPDATE chat_session SET event_seq = LAST_INSERT_ID(event_seq + 1) WHERE id = ?",
                            -1L));

            SessionLease leases = agent.bean(SessionLease.class);
            for (int round = 1; round <= 3; round++) {
                SessionLease.Lease lease = leases.claim(session);
                assertNotNull(lease, "round " + round);
                assertEquals(round, lease.epoch());
                assertEquals(round, agent.count("SELECT lease_epoch FROM chat_session WHERE id = ?", session));
                assertNull(leases.claim(session), "held: a second claim fails");
                leases.release(lease);
            }
        }
    }
}
