package dev.settle.schema;

/**
 * The table of a statement that locks a list of its rows by primary key under REPEATABLE READ ({@code WHERE s.id IN
 * (...)}): named with its primary key forced. Without it MariaDB 11.4's optimizer reads a small table (tens of rows, a
 * young deployment's; the timer table is small by nature) by a scan of the whole primary key once the list holds a good
 * part of it, and such a scan locks, so waits for, every row it reads: the statement queues behind any writer of any
 * row (a frozen agent's reply commit, the other debounce instance's round waiting for the broker) and holds every row
 * it passed until its transaction ends. With the key forced it reads the listed rows only, on MySQL as on MariaDB.
 *
 * <p>MySQL takes index hints in SELECT, UPDATE and multi-table DELETE, not in single-table DELETE, so a delete by list
 * is written {@code DELETE d FROM debounce_timer d FORCE INDEX (PRIMARY) WHERE ...} (the multi-table form). The lease
 * renewals lock sessions by a list too, but on a READ COMMITTED pool, whose reads skip a row that does not match
 * instead of waiting for it.
 */
public final class LockedById {
    private LockedById() {}

    /** The session table, alias {@code s} ({@code BatchAcceptanceLockTest}). */
    public static final String SESSIONS = "chat_session s FORCE INDEX (PRIMARY)";

    /** The timer table, alias {@code d} ({@code FiredTimersLockScopeTest}). */
    public static final String TIMERS = "debounce_timer d FORCE INDEX (PRIMARY)";
}
