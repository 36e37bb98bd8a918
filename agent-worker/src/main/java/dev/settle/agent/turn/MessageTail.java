package dev.settle.agent.turn;

import org.springframework.jdbc.core.JdbcTemplate;

import java.time.Duration;
import java.util.ArrayDeque;
import java.util.Deque;

/**
 * The user messages committed since the previous read, in one statement whatever the caller does with them: each
 * {@link #read} hands over (session, version) of every user message committed since the previous read, and again
 * some it handed over before.
 *
 * <p>Ids ({@code AUTO_INCREMENT}) are taken when a message is inserted, not when its transaction commits, so a
 * message can become visible after a higher id was already read (ingest's group commit makes this common). So a read
 * starts above the highest id seen, and every {@link #RESCAN_EVERY}-th read starts instead from the highest id that
 * had been seen {@code lag} ago ({@link #LOOKBACK} plus one poll interval): every id range is read again for that
 * long, and a message whose transaction commits within {@link #LOOKBACK} of a higher id being read is still handed
 * over, within {@link #RESCAN_EVERY} reads of its commit. A message whose transaction took longer than that between
 * its insert and its commit can be missed.
 *
 * <p>The first read, and the first after a pause longer than {@code lag} (the caller reads only while it needs
 * to), starts from the newest message created at least {@code lag} ago on the database clock ({@link #START}): a
 * message is stamped before its id is taken, so every id taken since that stamp is above it, the ones still to commit
 * included (all but those taken while that message's own transaction was between its stamp and its insert).
 */
public final class MessageTail {
    /**
     * How long a transaction of ingest may take between inserting a message and committing it and still be read: an
     * accept transaction (group commit included) takes milliseconds; two seconds cover a slow commit with room to
     * spare, at the cost of reading each message again on the rescans of that span ({@link #RESCAN_EVERY}).
     */
    static final Duration LOOKBACK = Duration.ofSeconds(2);

    /**
     * Every how many reads one starts from the lagged floor: a late commit is handed over at most this many reads
     * (250 ms at the default 50 ms poll) after it, and a message is read about {@code LOOKBACK / (interval × this)}
     * times instead of {@code LOOKBACK / interval} (8 instead of 40 by default).
     */
    static final int RESCAN_EVERY = 5;

    /** The user messages above the floor: a range of the primary key. */
    public static final String READ =
            "SELECT id, session_id, version FROM chat_message WHERE id > ? AND version IS NOT NULL";

    /** Where a read without history starts: the id of the newest message created at least {@code ?} µs ago. */
    public static final String START = """
            SELECT id FROM chat_message
             WHERE created_at <= UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND
             ORDER BY created_at DESC LIMIT 1""";

    /** A user message: its session and the session's version after it. */
    @FunctionalInterface
    interface Sink {
        void message(long sessionId, long version);
    }

    /** The highest id seen as of a read (at, System.nanoTime()). */
    private record Mark(long atNanos, long highest) {}

    private final JdbcTemplate jdbc;
    private final long lagNanos;
    /** reads younger than the lag, oldest first; only the reading thread touches the fields */
    private final Deque<Mark> marks = new ArrayDeque<>();

    private long floor;
    private long highest;
    private long lastReadNanos;
    private boolean started;
    private long reads;

    /** @param interval how often the caller reads */
    MessageTail(JdbcTemplate jdbc, Duration interval) {
        this.jdbc = jdbc;
        this.lagNanos = LOOKBACK.plus(interval).toNanos();
    }

    /** Hands every user message above the floor to {@code sink}; a read that throws changes nothing. */
    void read(Sink sink) {
        long now = System.nanoTime();
        if (!started || now - lastReadNanos > lagNanos) {
            restart();
        }
        while (!marks.isEmpty() && now - marks.peekFirst().atNanos() >= lagNanos) {
            floor = marks.pollFirst().highest();
        }
        long[] top = {highest};
        jdbc.query(
                READ,
                rs -> {
                    long id = rs.getLong(1);
                    top[0] = Math.max(top[0], id);
                    sink.message(rs.getLong(2), rs.getLong(3));
                },
                reads++ % RESCAN_EVERY == 0 ? floor : highest);
        highest = top[0];
        marks.addLast(new Mark(now, highest));
        lastReadNanos = now;
    }

    private void restart() {
        Long start = jdbc.query(START, rs -> rs.next() ? rs.getLong(1) : 0L, lagNanos / 1_000);
        floor = start == null ? 0 : start;
        highest = floor;
        reads = 0;
        marks.clear();
        started = true;
    }
}
