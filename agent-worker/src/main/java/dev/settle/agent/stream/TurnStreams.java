package dev.settle.agent.stream;

import dev.settle.agent.AgentSettings;
import dev.settle.agent.lease.SessionLease;
import dev.settle.schema.SessionEvents;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.PlatformTransactionManager;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

/** Opens a {@link TurnStream} per turn. */
@Component
public class TurnStreams {
    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final AgentSettings.Stream settings;

    public TurnStreams(JdbcTemplate jdbc, PlatformTransactionManager txManager, AgentSettings settings) {
        this.jdbc = jdbc;
        this.tx = new TransactionTemplate(txManager);
        this.tx.setIsolationLevel(TransactionDefinition.ISOLATION_READ_COMMITTED);
        this.settings = settings.stream();
    }

    /** @param started the turn's opening event, written first (with the first deltas when they come soon) */
    public TurnStream open(SessionLease.Lease lease, long turnId, SessionEvents.Event started) {
        return new TurnStream(jdbc, tx, lease, turnId, started, settings);
    }
}
