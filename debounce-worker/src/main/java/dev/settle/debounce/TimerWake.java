package dev.settle.debounce;

import java.time.Instant;

/**
 * Told by whatever arms a timer in this process ({@link DebounceTimers}, {@link StrandedSessionSweeper}) when that
 * timer may be due, after its write committed, so that {@link TimerFirer} fires it on time without polling for it.
 */
@FunctionalInterface
public interface TimerWake {
    /** Nothing to tell (tests that arm timers without a firer). */
    TimerWake NONE = dueAt -> {};

    /** A timer armed here may be due as early as {@code dueAt} (database clock). */
    void armed(Instant dueAt);
}
