package dev.settle.agent;

import dev.settle.agent.lease.SessionLease;
import dev.settle.schema.GuardedInsert;
import dev.settle.schema.OkPacket;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.SingleConnectionDataSource;

import java.sql.Connection;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * A claim and an event-seq reservation are one round trip each: the UPDATE's {@code LAST_INSERT_ID(expr)} comes
 * back in its OK packet. Pins that Connector/J hands the value over (not the fallback query), and that the lease
 * epochs it reports are the ones stored; and that an insert's new key is read from its own OK packet.
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

    static final String INSERT_TURN = """
            INSERT INTO chat_turn (session_id, lease_token, lease_epoch, from_version, to_version, state, started_at)
            VALUES (?, ?, 1, 1, 1, 'FAILED', UTC_TIMESTAMP(6))""";

    @Test
    void an_insert_reports_its_own_new_key_not_the_connections_last_insert_id() throws Exception {
        try (TestAgent agent = new TestAgent("okpacket-insert", Map.of());
                Connection one = agent.bean(javax.sql.DataSource.class).getConnection()) {
            long session = agent.sessionWithMessages(1);
            // every statement on one connection, where LAST_INSERT_ID(expr) of an earlier UPDATE is still set
            JdbcTemplate jdbc = new JdbcTemplate(new SingleConnectionDataSource(one, true));
            for (int round = 1; round <= 3; round++) {
                OkPacket.Reserved seq = OkPacket.update(
                        jdbc,
                        "UPDATE chat_session SET event_seq = LAST_INSERT_ID(event_seq + 1000) WHERE id = ?",
                        session);
                assertEquals(
                        agent.count("SELECT event_seq FROM chat_session WHERE id = ?", session), seq.lastInsertId());
                long key = OkPacket.insert(jdbc, INSERT_TURN, session, "token-" + round);
                assertEquals(agent.count("SELECT id FROM chat_turn WHERE lease_token = ?", "token-" + round), key);
                String guarded = INSERT_TURN.replace(
                        "VALUES (?,", "VALUES ((SELECT s.id FROM chat_session s WHERE s.id = ? AND s.version = ?),");
                assertNull(GuardedInsert.insert(jdbc, guarded, session, 999, "refused-" + round));
                Long guardedKey = GuardedInsert.insert(jdbc, guarded, session, 1, "guarded-" + round);
                assertEquals(
                        Long.valueOf(agent.count("SELECT id FROM chat_turn WHERE lease_token = ?", "guarded-" + round)),
                        guardedKey);
            }
            assertEquals(0, agent.count("SELECT COUNT(*) FROM chat_turn WHERE lease_token LIKE 'refused-%'"));
            // what OkPacket.insert reads first: Connector/J hands the key over from the OK packet
            try (java.sql.PreparedStatement ps = one.prepareStatement(INSERT_TURN)) {
                ps.setLong(1, session);
                ps.setString(2, "driver");
                assertEquals(1, ps.executeUpdate());
                assertEquals(
                        agent.count("SELECT id FROM chat_turn WHERE lease_token = 'driver'"),
                        ps.unwrap(com.mysql.cj.jdbc.StatementImpl.class).getLastInsertID());
            }
        }
    }
}
