package dev.settle.agent.turn;

import dev.settle.agent.lease.Heartbeats;
import dev.settle.agent.lease.LeaseLostException;
import dev.settle.agent.lease.SessionLease;
import dev.settle.agent.lease.TurnControl;
import dev.settle.agent.model.ModelStream;
import dev.settle.agent.stream.TurnStream;
import dev.settle.agent.stream.TurnStreams;
import dev.settle.schema.SessionEvents;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;
import org.springframework.stereotype.Component;

import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * One turn for one session, from claim to release.
 *
 * <ol>
 *   <li>Claim the lease (one CAS); busy or nothing to do → return at once, never wait.</li>
 *   <li>Read the unanswered span (replied_version, version] and the history under the lease.</li>
 *   <li>Open a RUNNING turn (its turn.started event opens the stream), keep the lease alive with heartbeats, and
 *       let the {@link InterruptWatcher} stop it when a newer message arrives (merge policy, before max-wait).</li>
 *   <li>Run the model↔tool rounds ({@link AgentLoop}), streaming into the turn's {@link TurnStream}. All
 *       attempts of a model call failed → the turn FAILS, reply.failed is queued.</li>
 *   <li>Take over what the stream has not written yet and check that the streamed text equals the model's text;
 *       a difference fails the turn loudly instead of committing it.</li>
 *   <li>Stop the heartbeat (the lease has at least two thirds of its TTL left) and commit the reply, the rest of
 *       the stream and the lease's release in one transaction ({@link ReplyCommit}); persisted deltas missing →
 *       FAILED; superseded or interrupted → DISCARDED (its partial text stays on record, its tokens are counted,
 *       its finished tool calls stay in the history); lease lost → write nothing.</li>
 *   <li>Release the lease unless the commit did, then re-arm the session's timer if messages may be waiting.</li>
 * </ol>
 * An unexpected error while the lease is alive (a database connection lost mid-statement) ends the turn as
 * {@link TurnOutcome#ERROR}: the turn is closed with the error as its reason, then released and re-armed as above.
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
        Ended ended = new Ended(TurnOutcome.LEASE_LOST, false, false);
        Heartbeats.Beat beat = heartbeats.start(lease);
        try (beat) {
            ended = answer(lease, readyVersion, beat, new TurnControl(beat));
        } catch (RuntimeException e) {
            // a lost lease interrupts the turn's thread wherever it is: a database call it breaks throws its own
            // exception, which is the lease's loss too
            if (!(e instanceof LeaseLostException) && beat.alive()) {
                ended = broken(lease, e);
            } else {
                meters.counter("settle.lease.fenced").increment();
                log.info(
                        "session {}: lease lost mid-turn, nothing more written{}",
                        sessionId,
                        e instanceof LeaseLostException ? "" : " (" + e + ")");
            }
        } finally {
            interrupts.forget(sessionId);
            // the beat is closed (try-with-resources closes it first), so no heartbeat interrupt arrives after this
            Thread.interrupted();
            try {
                try {
                    if (!ended.released()) {
                        leases.release(lease);
                    }
                } finally {
                    if (!ended.released() || ended.waiting()) {
                        waker.rearmIfPending(sessionId);
                    }
                }
            } finally {
                inFlight.decrementAndGet();
                MDC.remove("sessionId");
                MDC.remove("turnId");
            }
        }
        meters.counter("settle.turns", "outcome", ended.outcome().tag()).increment();
        return ended.outcome();
    }

    /**
     * How a turn ended.
     *
     * @param released the reply's commit released the lease
     * @param waiting  newer messages were waiting when it did
     */
    private record Ended(TurnOutcome outcome, boolean released, boolean waiting) {
        static Ended of(TurnOutcome outcome) {
            return new Ended(outcome, false, false);
        }
    }

    /**
     * An unexpected error broke the turn while its lease was alive: the turn is closed with the error as its reason
     * (if it had begun, and the database answers) and the caller releases the lease and re-arms the session. A
     * database error is logged in one line (connections break, failovers happen); anything else with its stack.
     */
    private Ended broken(SessionLease.Lease lease, RuntimeException e) {
        String closed = "";
        try {
            turns.closeBroken(lease, e);
        } catch (RuntimeException again) {
            closed = " (the turn stays RUNNING for the next holder to close: " + again + ")";
        }
        if (DatabaseErrors.isDatabase(e)) {
            log.warn("session {}: turn broken by a database error, to run again: {}{}", lease.sessionId(), e, closed);
        } else {
            log.error("session {}: turn broken by an unexpected error, to run again{}", lease.sessionId(), closed, e);
        }
        return Ended.of(TurnOutcome.ERROR);
    }

    private Ended answer(SessionLease.Lease lease, long readyVersion, Heartbeats.Beat beat, TurnControl control) {
        Conversation.Snapshot turn = conversation.load(lease, readyVersion);
        if (turn == null) {
            return Ended.of(TurnOutcome.NOTHING);
        }
        Long turnId = turns.begin(lease, turn.fromVersion(), turn.toVersion(), turn.abandoned());
        if (turnId == null) {
            throw new LeaseLostException();
        }
        MDC.put("turnId", Long.toString(turnId));
        interrupts.watch(lease.sessionId(), turn.toVersion(), control);
        AgentLoop.Usage usage = new AgentLoop.Usage();
        String text;
        TurnStream.Rest rest;
        try (TurnStream stream =
                streams.open(lease, turnId, Turns.started(turnId, turn.fromVersion(), turn.toVersion()))) {
            try {
                text = agent.answer(lease, turnId, turn, control, stream, usage);
            } catch (TurnControl.Interrupted e) {
                stream.finish(); // the partial text stays on record, never delivered
                return Ended.of(discard(lease, turnId, turn, e.getMessage(), usage, List.of()));
            } catch (ModelStream.ModelFailedException e) {
                stream.finish();
                failures.record(lease, turnId, turn, e.getMessage(), usage.calls());
                countTokens(turnId, "failed");
                return Ended.of(TurnOutcome.FAILED);
            }
            rest = stream.handOver();
        }
        if (!rest.text().equals(text)) {
            return Ended.of(streamLost(lease, turnId, turn, usage, rest.text().length(), text.length()));
        }
        if (!control.leaseAlive()) {
            throw new LeaseLostException();
        }
        beat.close(); // the commit releases the lease: no renewal may find it gone and stop this thread
        ReplyCommit.Result result = replies.commit(lease, turnId, turn, rest, usage.calls());
        return switch (result.outcome()) {
            case COMMITTED -> {
                countTokens("committed", usage.calls());
                log.info(
                        "session {}: reply committed for versions {}-{}",
                        lease.sessionId(),
                        turn.fromVersion(),
                        turn.toVersion());
                yield new Ended(TurnOutcome.COMMITTED, true, result.waiting());
            }
            case SUPERSEDED ->
                Ended.of(discard(
                        lease,
                        turnId,
                        turn,
                        "superseded: a newer message arrived while generating",
                        usage,
                        rest.events()));
            case STREAM_LOST -> Ended.of(streamLost(lease, turnId, turn, usage, -1, text.length()));
            case LEASE_LOST -> {
                meters.counter("settle.lease.fenced").increment(); // the commit was refused by the fence
                yield Ended.of(TurnOutcome.LEASE_LOST);
            }
        };
    }

    /**
     * The stream persisted is not the text the model streamed: the turn fails loudly instead of committing it.
     *
     * @param persistedChars characters persisted, -1 when the commit found persisted deltas missing
     */
    private TurnOutcome streamLost(
            SessionLease.Lease lease,
            long turnId,
            Conversation.Snapshot turn,
            AgentLoop.Usage usage,
            int persistedChars,
            int textChars) {
        log.error(
                "session {} turn {}: persisted stream ({}) differs from the model's text ({} chars); failing the turn",
                lease.sessionId(),
                turnId,
                persistedChars < 0 ? "deltas missing" : persistedChars + " chars",
                textChars);
        failures.record(lease, turnId, turn, "persisted stream differs from the model's text", usage.calls());
        countTokens(turnId, "failed");
        return TurnOutcome.FAILED;
    }

    /**
     * Adds a finished turn's tokens to {@code settle.model.tokens}, by kind (prompt, cached — the part of prompt a
     * provider's cache served —, completion) and by the turn's outcome.
     */
    private Turns.Tokens countTokens(long turnId, String outcome) {
        Turns.Tokens tokens = turns.tokensOf(turnId);
        countTokens(outcome, new Turns.Calls(0, tokens.prompt(), tokens.cached(), tokens.completion()));
        return tokens;
    }

    /** {@link #countTokens(long, String)} from the counts in hand. */
    private void countTokens(String outcome, Turns.Calls tokens) {
        meters.counter("settle.model.tokens", "kind", "prompt", "outcome", outcome)
                .increment(tokens.prompt());
        meters.counter("settle.model.tokens", "kind", "cached", "outcome", outcome)
                .increment(tokens.cached());
        meters.counter("settle.model.tokens", "kind", "completion", "outcome", outcome)
                .increment(tokens.completion());
    }

    private TurnOutcome discard(
            SessionLease.Lease lease,
            long turnId,
            Conversation.Snapshot turn,
            String reason,
            AgentLoop.Usage usage,
            List<SessionEvents.Event> unwritten) {
        if (turns.discard(lease, turnId, reason, usage.spent(), usage.calls(), unwritten)) {
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
