package dev.settle.agent;

import dev.settle.agent.lease.SessionLease;
import dev.settle.agent.turn.TurnOutcome;
import dev.settle.agent.turn.TurnRunner;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

import java.time.LocalDateTime;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;

/**
 * The lease metrics and the deadline a discarded turn leaves behind, on whole turns through {@link TurnRunner}:
 * {@code settle.lease.takeovers} counts every claim that replaced an expired holder's lease, whatever woke the turn;
 * {@code settle.lease.fenced} counts a holder that lost its lease mid-turn; a discarded turn keeps the oldest
 * unanswered message's time, and {@link WorkWaker} re-arms the timer with that message's max-wait deadline.
 */
class LeaseMetricsTest {
    static final int WINDOW_S = 100;
    static final int MAXWAIT_S = 120;
    static TestAgent agent;
    static ModelDouble model;
    static MeterRegistry meters;

    @BeforeAll
    static void start() {
        model = ModelDouble.start();
        agent = new TestAgent(
                "leasemetrics",
                Map.of(
                        "settle.llm.url",
                        model.baseUrl(),
                        "settle.llm.max-attempts",
                        "1",
                        "settle.debounce.window",
                        WINDOW_S + "s",
                        "settle.debounce.maxwait",
                        MAXWAIT_S + "s"));
        meters = agent.bean(MeterRegistry.class);
    }

    @AfterAll
    static void stop() {
        agent.close();
        model.close();
    }

    static double count(String name) {
        return meters.counter(name).count();
    }

    static long session(String marker) {
        long session = agent.sessionWithMessages(1);
        agent.jdbc.update("UPDATE chat_message SET text = ? WHERE session_id = ?", marker, session);
        return session;
    }

    @Test
    void a_takeover_is_counted_whatever_woke_the_turn_and_a_free_claim_is_not() {
        double before = count("settle.lease.takeovers");
        long free = session("free-" + UUID.randomUUID());
        assertEquals(TurnOutcome.COMMITTED, agent.bean(TurnRunner.class).run(free));
        assertEquals(before, count("settle.lease.takeovers"), "nobody held the lease");

        long orphaned = session("orphaned-" + UUID.randomUUID());
        assertNotNull(agent.bean(SessionLease.class).claim(orphaned)); // a holder that died
        agent.jdbc.update(
                "UPDATE chat_session SET lease_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE id = ?",
                orphaned);
        assertEquals(
                TurnOutcome.COMMITTED,
                agent.bean(TurnRunner.class).run(orphaned)); // woken by an event, not by the scanner
        assertEquals(before + 1, count("settle.lease.takeovers"));
    }

    @Test
    void a_holder_that_loses_its_lease_mid_turn_is_counted_fenced_and_writes_no_reply() {
        String marker = "fenced-" + UUID.randomUUID();
        long session = session(marker);
        AtomicReference<SessionLease.Lease> successor = new AtomicReference<>();
        model.respondWith(r -> {
            if (r.body().contains(marker) && successor.get() == null) {
                // while the model answers, the lease expires and another worker takes the session over
                agent.jdbc.update(
                        "UPDATE chat_session SET lease_expires_at = UTC_TIMESTAMP(6) - INTERVAL 1 SECOND WHERE id = ?",
                        session);
                successor.set(agent.bean(SessionLease.class).claim(session));
            }
            return ModelDouble.echo(r);
        });
        double fenced = count("settle.lease.fenced");
        double takeovers = count("settle.lease.takeovers");

        assertEquals(TurnOutcome.LEASE_LOST, agent.bean(TurnRunner.class).run(session));

        assertNotNull(successor.get());
        assertEquals(fenced + 1, count("settle.lease.fenced"));
        assertEquals(takeovers, count("settle.lease.takeovers"), "the successor claimed outside a turn");
        assertEquals(
                0,
                agent.count("SELECT COUNT(*) FROM chat_message WHERE session_id = ? AND role = 'assistant'", session));
        assertEquals(0, agent.count("SELECT replied_version FROM chat_session WHERE id = ?", session));
        agent.bean(SessionLease.class).release(successor.get());
    }

    @Test
    void a_discarded_turn_keeps_the_max_wait_deadline_and_the_timer_is_rearmed_with_it() {
        String marker = "discarded-" + UUID.randomUUID();
        long session = session(marker);
        // the oldest unanswered message came a minute ago: its max-wait deadline is a minute ahead
        agent.jdbc.update(
                "UPDATE chat_session SET oldest_unanswered_at = UTC_TIMESTAMP(6) - INTERVAL 60 SECOND WHERE id = ?",
                session);
        LocalDateTime oldest = oldestUnanswered(session);
        model.respondWith(r -> {
            if (r.body().contains(marker)
                    && agent.count("SELECT version FROM chat_session WHERE id = ?", session) == 1) {
                agent.newMessage(session); // the user writes again while the model answers
            }
            return ModelResponse.text("stale answer");
        });

        assertEquals(TurnOutcome.DISCARDED, agent.bean(TurnRunner.class).run(session));

        assertEquals(oldest, oldestUnanswered(session), "the discard moved nothing");
        // last message + window (100 s) is past the deadline (oldest + 120 s): the timer fires at the deadline
        assertEquals(
                List.of(List.of((long) MAXWAIT_S * 1_000_000, 0L, 2L)),
                agent.jdbc.query(
                        """
                SELECT TIMESTAMPDIFF(MICROSECOND, s.oldest_unanswered_at, d.deadline_at) AS deadline,
                       TIMESTAMPDIFF(MICROSECOND, d.deadline_at, d.fire_at) AS fire, d.armed_version
                  FROM debounce_timer d JOIN chat_session s ON s.id = d.session_id
                 WHERE d.session_id = ? AND d.armed_by = 'agent'""",
                        (rs, i) -> List.of(rs.getLong("deadline"), rs.getLong("fire"), rs.getLong("armed_version")),
                        session));
    }

    static LocalDateTime oldestUnanswered(long session) {
        return agent.jdbc.queryForObject(
                "SELECT oldest_unanswered_at FROM chat_session WHERE id = ?",
                (rs, i) -> rs.getObject(1, LocalDateTime.class),
                session);
    }
}
