package dev.settle.testsupport;

import java.time.Duration;
import java.util.function.BooleanSupplier;

/** Polls a condition until it holds or a timeout passes. */
final class Await {
    private Await() {
    }

    static boolean until(BooleanSupplier condition, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() - deadline >= 0) {
                return false;
            }
            try {
                Thread.sleep(5);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return condition.getAsBoolean();
            }
        }
        return true;
    }
}
