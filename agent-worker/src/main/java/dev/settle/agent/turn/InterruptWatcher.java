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
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;

/**
 * Early interrupt under the merge policy: a message accepted while a turn is generating cancels the model
 * stream (the reply would be discarded anyway) — unless the turn is past the max-wait deadline of the oldest
 * unanswered message, in which case it is left to commit for the versions it saw.
 *
 * <ol>
 *   <li>Every {@code settle.stream.interrupt-poll} (50 ms), one query per 500 in-flight sessions
 *       ({@link #CHECK}) returns only the sessions to interrupt: version moved past the turn's, policy merge,
 *       deadline still ahead on the DB clock. Nothing to interrupt → an empty result, so a worker with
 *       thousands of turns in flight does not decode thousands of unchanged rows twenty times a second.</li>
 *   <li>Each returned session's turn is interrupted.</li>
 * </ol>
 * Polling keeps this independent of Kafka and of which instance accepted the message.
 */
@Component
public class InterruptWatcher extends PeriodicTask {
    private static final Logger log = LoggerFactory.getLogger(InterruptWatcher.class);
    /** {@code %s}: one {@code (s.id = ? AND s.version > ?)} per watched session (its turn's last version), OR-ed. */
    public static final String CHECK = """
            SELECT s.id, s.version
              FROM chat_session s
             WHERE (%s)
               AND\s""" + SessionRules.EFFECTIVE_POLICY + " = 'merge'" + """

               AND s.oldest_unanswered_at > UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND""";

    record Watched(long toVersion, TurnControl control) {}

    private final Map<Long, Watched> inFlight = new ConcurrentHashMap<>();
    private final JdbcTemplate jdbc;
    private final String defaultPolicy;
    private final long maxWaitMicros;

    public InterruptWatcher(JdbcTemplate jdbc, AgentSettings settings, DebounceTiming timing) {
        super("interrupt-watcher", settings.stream().interruptPoll());
        this.jdbc = jdbc;
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

    void check() {
        List<Long> ids = new ArrayList<>(inFlight.keySet());
        for (int from = 0; from < ids.size(); from += 500) {
            List<Long> part = ids.subList(from, Math.min(ids.size(), from + 500));
            List<Object> args = new ArrayList<>();
            Map<Long, Watched> asked = new java.util.HashMap<>();
            for (Long id : part) {
                Watched w = inFlight.get(id);
                if (w != null) {
                    asked.put(id, w);
                    args.add(id);
                    args.add(w.toVersion());
                }
            }
            if (asked.isEmpty()) {
                continue;
            }
            String sql = CHECK.formatted(
                    String.join(" OR ", Collections.nCopies(asked.size(), "(s.id = ? AND s.version > ?)")));
            args.add(defaultPolicy);
            args.add(maxWaitMicros);
            jdbc.query(
                    sql,
                    rs -> {
                        Watched w = asked.get(rs.getLong("id"));
                        if (w != null
                                && rs.getLong("version") > w.toVersion()
                                && w.control().interrupt("interrupted: a newer message arrived while generating")) {
                            log.info(
                                    "session {}: version {} arrived while generating for {}; interrupted",
                                    rs.getLong("id"),
                                    rs.getLong("version"),
                                    w.toVersion());
                        }
                    },
                    args.toArray());
        }
    }

    @Override
    protected void tick() {
        if (!inFlight.isEmpty()) {
            check();
        }
    }
}
