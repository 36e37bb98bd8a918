package dev.settle.agent.turn;

/** What one {@link TurnRunner#run} did; {@link #tag()} is its value of the {@code settle.turns} outcome tag. */
public enum TurnOutcome {
    /** Another holder has the lease: nothing was done, nothing waited for. */
    BUSY("busy"),
    /** The lease was claimed but no message was unanswered. */
    NOTHING("nothing"),
    /** The reply was committed with its webhook delivery. */
    COMMITTED("committed"),
    /** A newer message superseded or interrupted the turn: DISCARDED, its partial text kept on record. */
    DISCARDED("discarded"),
    /** Every model call failed, or the persisted stream differed from the model's text: FAILED, reply.failed queued. */
    FAILED("failed"),
    /** The lease was lost mid-turn: nothing more was written. */
    LEASE_LOST("lease-lost"),
    /**
     * An unexpected error broke the turn (a database connection lost mid-statement, say): FAILED with the error as
     * its reason, nothing delivered; the lease is released and the session re-armed, so its messages are answered by
     * a turn that starts again.
     */
    ERROR("error");

    private final String tag;

    TurnOutcome(String tag) {
        this.tag = tag;
    }

    public String tag() {
        return tag;
    }
}
