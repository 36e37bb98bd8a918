package dev.settle.ingest.accept;

import java.time.Instant;

/**
 * A session's message times rise with its versions: a message is stamped with the database time, or 1 µs after the
 * session's previous message ({@code chat_session.last_message_at}) when the database time is not later. Both accept
 * paths decide under the session's row lock, so the previous message is the one of the version before.
 */
final class MessageTimes {
    /**
     * The rule in SQL, for an upsert of chat_session that holds its row: the new {@code last_message_at}. The database
     * time is the statement's start, perhaps before it waited for the row, when an earlier version was stamped.
     */
    static final String NEXT = """
            GREATEST(UTC_TIMESTAMP(6), COALESCE(last_message_at + INTERVAL 1 MICROSECOND, UTC_TIMESTAMP(6)))""";

    private MessageTimes() {}

    /** The rule in Java: {@code now} (the database time), or 1 µs after {@code previous} (null: none) if that is later. */
    static Instant next(Instant now, Instant previous) {
        if (previous == null) {
            return now;
        }
        Instant after = previous.plusNanos(1_000);
        return after.isAfter(now) ? after : now;
    }
}
