package dev.settle.agent;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;
import org.springframework.stereotype.Component;

/**
 * One turn for one session, from claim to release.
 *
 * <ol>
 *   <li>Claim the lease (one CAS); busy or nothing to do → return at once, never wait.</li>
 *   <li>Read the unanswered span (replied_version, version] and the history under the lease.</li>
 *   <li>Open a RUNNING turn row and keep the lease alive with heartbeats.</li>
 *   <li>Run the model↔tool rounds ({@link AgentLoop}; model calls retried a bounded number of times, tools
 *       exactly once). All attempts of a model call failed → the turn FAILS, reply.failed is queued.</li>
 *   <li>Commit the reply in one guarded statement; superseded by a newer message → DISCARDED, the reply is
 *       dropped, the next turn covers everything; lease lost → write nothing.</li>
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
    private final ReplyCommit replies;
    private final TurnFailure failures;
    private final WorkWaker waker;

    public TurnRunner(SessionLease leases, Heartbeats heartbeats, Conversation conversation, Turns turns,
                      AgentLoop agent, ReplyCommit replies, TurnFailure failures, WorkWaker waker) {
        this.leases = leases;
        this.heartbeats = heartbeats;
        this.conversation = conversation;
        this.turns = turns;
        this.agent = agent;
        this.replies = replies;
        this.failures = failures;
        this.waker = waker;
    }

    /** @return what happened, for logs and tests */
    public String run(long sessionId) {
        SessionLease.Lease lease = leases.claim(sessionId);
        if (lease == null) {
            return "busy";
        }
        MDC.put("sessionId", Long.toString(sessionId));
        String outcome = "lease-lost";
        try (Heartbeats.Beat beat = heartbeats.start(lease)) {
            outcome = answer(lease, beat);
        } catch (ModelCaller.LeaseLostException e) {
            log.info("session {}: lease lost mid-turn, nothing written", sessionId);
        } finally {
            Thread.interrupted(); // a late heartbeat interrupt must not leak into the release
            try {
                leases.release(lease);
                waker.rearmIfPending(sessionId);
            } finally {
                MDC.remove("sessionId");
                MDC.remove("turnId");
            }
        }
        return outcome;
    }

    private String answer(SessionLease.Lease lease, Heartbeats.Beat beat) {
        Conversation.Snapshot turn = conversation.load(lease);
        if (turn == null) {
            return "nothing";
        }
        long turnId = turns.begin(lease, turn.fromVersion(), turn.toVersion());
        MDC.put("turnId", Long.toString(turnId));
        String answer;
        try {
            answer = agent.answer(lease, turnId, turn, beat);
        } catch (ModelCaller.ModelFailedException e) {
            failures.record(lease, turnId, turn, e.getMessage());
            return "failed";
        }
        if (!beat.alive()) {
            throw new ModelCaller.LeaseLostException();
        }
        return switch (replies.commit(lease, turnId, turn, answer)) {
            case COMMITTED -> {
                log.info("session {}: reply committed for versions {}-{}", lease.sessionId(), turn.fromVersion(), turn.toVersion());
                yield "committed";
            }
            case SUPERSEDED -> {
                turns.end(lease, turnId, "DISCARDED", "superseded: a newer message arrived while generating");
                log.info("session {}: reply for versions {}-{} discarded, newer messages arrived", lease.sessionId(),
                        turn.fromVersion(), turn.toVersion());
                yield "discarded";
            }
            case LEASE_LOST -> "lease-lost";
        };
    }
}
