package dev.settle.agent.turn;

import dev.settle.agent.lease.Heartbeats;
import dev.settle.agent.lease.LeaseLostException;
import dev.settle.agent.lease.SessionLease;
import dev.settle.agent.lease.TurnControl;
import dev.settle.agent.model.ModelStream;
import dev.settle.agent.stream.TurnStream;
import dev.settle.agent.stream.TurnStreams;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;
import org.springframework.stereotype.Component;

import java.util.concurrent.atomic.AtomicInteger;

/**
 * One turn for one session, from claim to release.
 *
 * <ol>
 *   <li>Claim the lease (one CAS); busy or nothing to do → return at once, never wait.</li>
 *   <li>Read the unanswered span (replied_version, version] and the history under the lease.</li>
 *   <li>Open a RUNNING turn (turn.started), keep the lease alive with heartbeats, and let the
 *       {@link InterruptWatcher} stop it when a newer message arrives (merge policy, before max-wait).</li>
 *   <li>Run the model↔tool rounds ({@link AgentLoop}), streaming into the turn's {@link TurnStream}. All
 *       attempts of a model call failed → the turn FAILS, reply.failed is queued.</li>
 *   <li>Finish the stream and check that the persisted text equals the model's text; a difference fails the
 *       turn loudly instead of committing it.</li>
 *   <li>Commit the reply in one guarded statement; superseded or interrupted → DISCARDED (its partial text
 *       stays on record, its tokens are counted, its finished tool calls stay in the history); lease lost →
 *       write nothing.</li>
 *   <li>Release the lease, then re-arm the session's timer if messages are still waiting.</li>
 * </ol>
 */
@Component
public class TurnRunner {
    private static final Logger log = LoggerFactory.getLogger(TurnRunner.class);
    private final SessionLease leases;
    private final Heartbeats heartbeats;
    private final Conversation conversation;
    private final Turns turns;
    private final AgentLoop agent;
    private final TurnStreams streams;
    private final InterruptWatcher interrupts;
    private final ReplyCommit replies;
    private final TurnFailure failures;
    private final WorkWaker waker;
    private final MeterRegistry meters;

    public TurnRunner(
            SessionLease leases,
            Heartbeats heartbeats,
            Conversation conversation,
            Turns turns,
            AgentLoop agent,
            TurnStreams streams,
            InterruptWatcher interrupts,
            ReplyCommit replies,
            TurnFailure failures,
            WorkWaker waker,
            MeterRegistry meters) {
        this.leases = leases;
        this.heartbeats = heartbeats;
        this.conversation = conversation;
        this.turns = turns;
        this.agent = agent;
        this.streams = streams;
        this.interrupts = interrupts;
        this.replies = replies;
        this.failures = failures;
        this.waker = waker;
        this.meters = meters;
        meters.gauge("settle.turns.inflight", inFlight);
    }

    /** Turns this worker is running now (the {@code settle.turns.inflight} gauge). */
    private final AtomicInteger inFlight = new AtomicInteger();

    MeterRegistry meters() {
        return meters;
    }

    /** @return what happened, for logs and tests */
    public TurnOutcome run(long sessionId) {
        return run(sessionId, Long.MAX_VALUE);
    }

    /**
     * @param readyVersion the version of the SessionReady that woke this turn (it bounds an {@code enqueue}
     *                     turn to its burst, see {@link Conversation})
     * @return what happened, for logs and tests
     */
    public TurnOutcome run(long sessionId, long readyVersion) {
        SessionLease.Lease lease = leases.claim(sessionId);
        meters.counter("settle.lease.claims", "result", lease == null ? "busy" : "acquired")
                .increment();
        if (lease == null) {
            return TurnOutcome.BUSY;
        }
        if (lease.takeover()) {
            meters.counter("settle.lease.takeovers").increment(); // whoever woke this turn: event, sweeper or scanner
        }
        inFlight.incrementAndGet();
        MDC.put("sessionId", Long.toString(sessionId));
        TurnOutcome outcome = TurnOutcome.LEASE_LOST;
        try (Heartbeats.Beat beat = heartbeats.start(lease)) {
            outcome = answer(lease, readyVersion, new TurnControl(beat));
        } catch (LeaseLostException e) {
            meters.counter("settle.lease.fenced").increment();
            log.info("session {}: lease lost mid-turn, nothing more written", sessionId);
        } finally {
            interrupts.forget(sessionId);
            // the beat is closed (try-with-resources closes it first), so no heartbeat interrupt arrives after this
            Thread.interrupted();
            try {
                try {
                    leases.release(lease);
                } finally {
                    waker.rearmIfPending(sessionId);
                }
            } finally {
                inFlight.decrementAndGet();
                MDC.remove("sessionId");
                MDC.remove("turnId");
            }
        }
        meters.counter("settle.turns", "outcome", outcome.tag()).increment();
        return outcome;
    }

    private TurnOutcome answer(SessionLease.Lease lease, long readyVersion, TurnControl control) {
        Conversation.Snapshot turn = conversation.load(lease, readyVersion);
        if (turn == null) {
            return TurnOutcome.NOTHING;
        }
        Long turnId = turns.begin(lease, turn.fromVersion(), turn.toVersion(), turn.abandoned());
        if (turnId == null) {
            throw new LeaseLostException();
        }
        MDC.put("turnId", Long.toString(turnId));
        interrupts.watch(lease.sessionId(), turn.toVersion(), control);
        AgentLoop.Usage usage = new AgentLoop.Usage();
        String text;
        String persisted;
        try (TurnStream stream = streams.open(lease, turnId)) {
            try {
                text = agent.answer(lease, turnId, turn, control, stream, usage);
            } catch (TurnControl.Interrupted e) {
                stream.finish(); // the partial text stays on record, never delivered
                return discard(lease, turnId, turn, e.getMessage(), usage);
            } catch (ModelStream.ModelFailedException e) {
                stream.finish();
                failures.record(lease, turnId, turn, e.getMessage());
                countTokens(turnId, "failed");
                return TurnOutcome.FAILED;
            }
            persisted = stream.finish();
        }
        if (!persisted.equals(text)) {
            log.error(
                    "session {} turn {}: persisted stream ({} chars) differs from the model's text ({} chars); failing the turn",
                    lease.sessionId(),
                    turnId,
                    persisted.length(),
                    text.length());
            failures.record(lease, turnId, turn, "persisted stream differs from the model's text");
            countTokens(turnId, "failed");
            return TurnOutcome.FAILED;
        }
        if (!control.leaseAlive()) {
            throw new LeaseLostException();
        }
        return switch (replies.commit(lease, turnId, turn, text)) {
            case COMMITTED -> {
                countTokens(turnId, "committed");
                log.info(
                        "session {}: reply committed for versions {}-{}",
                        lease.sessionId(),
                        turn.fromVersion(),
                        turn.toVersion());
                yield TurnOutcome.COMMITTED;
            }
            case SUPERSEDED ->
                discard(lease, turnId, turn, "superseded: a newer message arrived while generating", usage);
            case LEASE_LOST -> {
                meters.counter("settle.lease.fenced").increment(); // the commit was refused by the fence
                yield TurnOutcome.LEASE_LOST;
            }
        };
    }

    /**
     * Adds a finished turn's tokens to {@code settle.model.tokens}, by kind (prompt, cached — the part of prompt a
     * provider's cache served —, completion) and by the turn's outcome.
     */
    private Turns.Tokens countTokens(long turnId, String outcome) {
        Turns.Tokens tokens = turns.tokensOf(turnId);
        meters.counter("settle.model.tokens", "kind", "prompt", "outcome", outcome)
                .increment(tokens.prompt());
        meters.counter("settle.model.tokens", "kind", "cached", "outcome", outcome)
                .increment(tokens.cached());
        meters.counter("settle.model.tokens", "kind", "completion", "outcome", outcome)
                .increment(tokens.completion());
        return tokens;
    }

    private TurnOutcome discard(
            SessionLease.Lease lease, long turnId, Conversation.Snapshot turn, String reason, AgentLoop.Usage usage) {
        if (turns.discard(lease, turnId, reason, usage.spent())) {
            Turns.Tokens tokens = countTokens(turnId, "discarded");
            meters.counter("settle.discarded.tokens").increment(tokens.prompt() + tokens.completion());
        }
        log.info(
                "session {}: turn for versions {}-{} discarded ({})",
                lease.sessionId(),
                turn.fromVersion(),
                turn.toVersion(),
                reason);
        return TurnOutcome.DISCARDED;
    }
}
