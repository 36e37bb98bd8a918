package dev.settle.debounce;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Polls a condition until it holds; the timeouts are generous bounds, never the thing under test. */
final class Await {
    static final Duration LONG = Duration.ofSeconds(20);

    private Await() {
    }

    static void until(String what, BooleanSupplier condition) {
        until(what, LONG, condition);
    }

    static void until(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out after " + timeout + " waiting for " + what);
            }
            sleep(Duration.ofMillis(10));
        }
    }

    static void sleep(Duration d) {
        try {
            Thread.sleep(d);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }
}
