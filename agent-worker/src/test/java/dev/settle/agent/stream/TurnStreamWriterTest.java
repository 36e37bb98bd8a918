package dev.settle.agent.stream;

import dev.settle.agent.AgentSettings;
import dev.settle.agent.lease.SessionLease;
import dev.settle.schema.SessionEvents;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionCallback;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Duration;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.mockito.ArgumentMatchers.any;
import static org.mockito.Mockito.mock;
import static org.mockito.Mockito.times;
import static org.mockito.Mockito.verify;
import static org.mockito.Mockito.when;

/**
 * A turn waiting for its model holds no writer thread: the writer starts with the first delta (or the end), and what
 * it writes is the same — turn.started first, in the first batch. Every batch write is counted (the transaction
 * template is a stand-in that reports each batch written).
 */
class TurnStreamWriterTest {
    private static final AgentSettings.Stream SETTINGS =
            new AgentSettings.Stream(32, Duration.ofMillis(50), Duration.ZERO, Duration.ofMillis(50));
    private static final SessionLease.Lease LEASE = new SessionLease.Lease(1, "token", 1);

    private final TransactionTemplate tx = written();

    @SuppressWarnings("unchecked")
    private static TransactionTemplate written() {
        TransactionTemplate tx = mock(TransactionTemplate.class);
        when(tx.execute(any(TransactionCallback.class))).thenReturn(Boolean.TRUE);
        return tx;
    }

    private TurnStream open() {
        return new TurnStream(
                mock(JdbcTemplate.class),
                tx,
                LEASE,
                7,
                SessionEvents.Event.of("turn.started", 7L, Map.of("turnId", 7L)),
                SETTINGS);
    }

    @Test
    @SuppressWarnings("unchecked")
    void the_writer_starts_with_the_first_delta() {
        TurnStream stream = open();
        assertFalse(stream.writing(), "no thread while the model has said nothing");
        stream.delta("");
        assertFalse(stream.writing(), "an empty delta is nothing to write");
        stream.delta("Hello");
        assertTrue(stream.writing());
        stream.delta(", world");
        assertEquals("Hello, world", stream.finish());
        verify(tx, times(1)).execute(any(TransactionCallback.class)); // turn.started and both deltas: one batch
    }

    @Test
    @SuppressWarnings("unchecked")
    void a_turn_that_streamed_nothing_still_writes_turn_started_at_its_end() {
        TurnStream stream = open();
        assertEquals("", stream.finish());
        assertTrue(stream.writing());
        verify(tx, times(1)).execute(any(TransactionCallback.class));
    }

    @Test
    void a_hand_over_before_any_delta_leaves_turn_started_to_the_caller() {
        TurnStream stream = open();
        TurnStream.Rest rest = stream.handOver();
        stream.close();
        assertEquals(1, rest.events().size());
        assertEquals("turn.started", rest.events().getFirst().type());
        assertEquals(0, rest.deltas());
        assertEquals("", rest.text());
    }
}
