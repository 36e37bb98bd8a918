package dev.settle.agent.lease;

/** The holder lost its lease (expired, or taken over): it stops at once and writes nothing more. */
public class LeaseLostException extends RuntimeException {
    public LeaseLostException() {
        super("lease lost");
    }
}
