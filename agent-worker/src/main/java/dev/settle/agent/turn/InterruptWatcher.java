package dev.settle.agent.turn;

import dev.settle.agent.AgentSettings;
import dev.settle.agent.lease.TurnControl;
import dev.settle.boot.PeriodicTask;
import dev.settle.schema.DebounceTiming;
import dev.settle.schema.SessionRules;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Early interrupt under the merge policy: a message accepted while a turn is generating cancels the model
 * stream (the reply would be discarded anyway) — unless the turn is past the max-wait deadline of the oldest
 * unanswered message, in which case it is left to commit for the versions it saw.
 *
 * <ol>
 *   <li>Every {@code settle.stream.interrupt-poll} (50 ms) while turns are in flight, one statement reads the user
 *       messages committed since the previous poll ({@link MessageTail}), whatever the number of turns in flight;
 *       none at all while none is.</li>
 *   <li>In memory, the sessions in flight whose version moved past their turn's and was not judged yet. Usually
 *       none, and then the poll ends.</li>
 *   <li>For those, {@link #CHECK} returns the ones to interrupt: version past the turn's, policy merge, deadline
 *       still ahead on the DB clock. Each version is judged once: a policy switched to merge afterwards applies from
 *       the session's next message.</li>
 *   <li>Each returned session's turn is interrupted, once ({@link TurnControl#interrupt}).</li>
 * </ol>
 * An interrupt missed (a message whose transaction took longer than the tail's lookback to commit, a policy
 * switched to merge after the message was judged) loses nothing: the reply's commit is guarded by the version and
 * discards a reply that a newer message superseded; it only costs the rest of that model call. Polling keeps this
 * independent of Kafka and of which instance accepted the message.
 */
@Component
public class InterruptWatcher extends PeriodicTask {
    private static final Logger log = LoggerFactory.getLogger(InterruptWatcher.class);
    /** At most this many sessions per {@link #CHECK}, so that a burst of messages never builds a huge statement. */
    private static final int CHECK_BATCH = 500;
    /** {@code %s}: one {@code (s.id = ? AND s.version > ?)} per session to judge (its turn's last version), OR-ed. */
    public static final String CHECK = """
            SELECT s.id, s.version
              FROM chat_session s
             WHERE (%s)
               AND\s""" + SessionRules.EFFECTIVE_POLICY + " = 'merge'" + """

               AND s.oldest_unanswered_at > UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND""";

    /** A turn in flight. {@code judged}: the highest version {@link #CHECK} was asked about (the poll thread's). */
    private static final class Watched {
        final long toVersion;
        final TurnControl control;
        long judged;

        Watched(long toVersion, TurnControl control) {
            this.toVersion = toVersion;
            this.control = control;
            this.judged = toVersion;
        }
    }

    private final Map<Long, Watched> inFlight = new ConcurrentHashMap<>();
    private final JdbcTemplate jdbc;
    private final MessageTail tail;
    private final String defaultPolicy;
    private final long maxWaitMicros;

    public InterruptWatcher(JdbcTemplate jdbc, AgentSettings settings, DebounceTiming timing) {
        super("interrupt-watcher", settings.stream().interruptPoll());
        this.jdbc = jdbc;
        this.tail = new MessageTail(jdbc, settings.stream().interruptPoll());
        this.defaultPolicy = settings.policy().defaultPolicy();
        this.maxWaitMicros = timing.maxwaitMicros();
    }

    public void watch(long sessionId, long toVersion, TurnControl control) {
        inFlight.put(sessionId, new Watched(toVersion, control));
    }

    public void forget(long sessionId) {
        inFlight.remove(sessionId);
    }

    public int inFlight() {
        return inFlight.size();
    }

    /** A watched session whose version moved past what was judged: the highest version the tail showed. */
    private record Moved(Watched watched, long version) {}

    void check() {
        Map<Long, Moved> moved = new HashMap<>();
        tail.read((sessionId, version) -> {
            Watched w = inFlight.get(sessionId);
            if (w != null && version > w.judged) {
                // the latest turn of the session, at the highest version shown for it
                moved.merge(
                        sessionId,
                        new Moved(w, version),
                        (a, b) -> a.watched() == b.watched() && a.version() >= b.version() ? a : b);
            }
        });
        List<Map.Entry<Long, Moved>> toJudge = new ArrayList<>(moved.entrySet());
        for (int from = 0; from < toJudge.size(); from += CHECK_BATCH) {
            judge(toJudge.subList(from, Math.min(toJudge.size(), from + CHECK_BATCH)));
        }
    }

    /** Asks {@link #CHECK} about {@code part}, interrupts what it returns, then marks the versions judged. */
    private void judge(List<Map.Entry<Long, Moved>> part) {
        Map<Long, Watched> asked = new HashMap<>();
        List<Object> args = new ArrayList<>();
        for (Map.Entry<Long, Moved> e : part) {
            asked.put(e.getKey(), e.getValue().watched());
            args.add(e.getKey());
            args.add(e.getValue().watched().toVersion);
        }
        args.add(defaultPolicy);
        args.add(maxWaitMicros);
        String sql =
                CHECK.formatted(String.join(" OR ", Collections.nCopies(asked.size(), "(s.id = ? AND s.version > ?)")));
        jdbc.query(
                sql,
                rs -> {
                    Watched w = asked.get(rs.getLong("id"));
                    if (w != null
                            && rs.getLong("version") > w.toVersion
                            && w.control.interrupt("interrupted: a newer message arrived while generating")) {
                        log.info(
                                "session {}: version {} arrived while generating for {}; interrupted",
                                rs.getLong("id"),
                                rs.getLong("version"),
                                w.toVersion);
                    }
                },
                args.toArray());
        for (Map.Entry<Long, Moved> e : part) {
            Watched w = e.getValue().watched();
            w.judged = Math.max(w.judged, e.getValue().version());
        }
    }

    @Override
    protected void tick() {
        if (!inFlight.isEmpty()) {
            check();
        }
    }
}
