package dev.settle.ingest.accept;

import dev.settle.ingest.IngestSettings;
import dev.settle.ingest.http.ApiProblem;
import dev.settle.schema.DbTime;
import dev.settle.schema.LockWait;
import dev.settle.schema.LockedById;
import dev.settle.schema.SessionEvents;
import dev.settle.schema.SessionRules;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.TransactionDefinition;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;

/**
 * "accepted means durable" for messages that arrive together ({@code settle.ingest.group-commit}, {@link GroupCommit}):
 * one transaction of a fixed number of statements, whatever the number of messages, stores every message of the
 * batch that is not refused, and each message gets the outcome it would have had alone, in arrival order.
 *
 * <ol>
 *   <li>{@link #LOCK_FREE_SESSIONS}: lock the batch's existing sessions that no other transaction holds, in one
 *       statement that waits for none ({@code FOR UPDATE SKIP LOCKED}); the row locks serialise every writer of these
 *       sessions until commit, as the one-message path's upsert does. A batch never waits for a row while it holds
 *       others: a session whose row another writer holds (a reply commit, a lease claim, a stalled writer) is left out
 *       of the batch, and its messages go alone, each waiting for its own row only ({@link Outcome#alone()}).</li>
 *   <li>{@link #READ_SESSIONS}: version, event seq, unanswered messages, policy, lease and timer of each session, and
 *       the batch's database time. A plain read, after the locks: it sees every commit before them. A session it finds
 *       that the first statement did not lock is held by another writer; one it does not find does not exist yet.</li>
 *   <li>Sessions that do not exist yet: {@link #LOCK_SESSIONS} creates them (version 0) and locks them in (tenant,
 *       session id) order, and {@link #READ_SESSIONS} reads them. It waits only for a session created meanwhile by
 *       another writer, at most {@code group-commit-lock-wait} ({@link LockWait}); past it the batch fails and its
 *       messages go alone ({@link GroupCommit}).</li>
 *   <li>{@link #FIND_KEYS}, only when a message carries an Idempotency-Key: the messages stored under those keys.</li>
 *   <li>Each message in arrival order, on its session as the messages before it left it, exactly as
 *       {@link MessageAcceptance} decides alone: a key already stored (or taken by an earlier message of the batch)
 *       answers that message again, or 422 for another body; more than {@code max-unanswered} → 429; policy
 *       {@code reject} and the session busy → 409. Otherwise it takes the session's next version and event seq. A
 *       refused message fails alone; the others are stored.</li>
 *   <li>{@link #BUMP_SESSIONS}, {@link #INSERT_MESSAGES} and {@link SessionEvents#insertReserved(JdbcTemplate, List)}:
 *       one statement each for all accepted messages; then the commit.</li>
 * </ol>
 *
 * <p>The transaction runs at READ COMMITTED: a locking read of a session that does not exist takes no gap lock, so a
 * batch never holds up the creation of other sessions.
 *
 * <p>Times: every message of a batch is stamped with the batch's database time, read after its locks, or 1 µs after its
 * session's previous message when that is later ({@link MessageTimes}), so a session's message times rise with its
 * versions.
 */
final class BatchAcceptance {
    /** Creates and locks sessions that did not exist: one row per session, in (tenant, session id) order. */
    static final String LOCK_SESSIONS = """
            INSERT INTO chat_session (tenant_id, external_id, version, event_seq, created_at)
            VALUES (?, ?, 0, 0, UTC_TIMESTAMP(6))
            ON DUPLICATE KEY UPDATE version = version""";

    static final String LOCK_ROW = "(?, ?, 0, 0, UTC_TIMESTAMP(6))";

    /**
     * The batch's (tenant, session id) pairs, each parameter pair one entry of the unique key: a list of pairs, not a
     * tenant list and an id list, whose product would name other tenants' sessions that share an id with one of the
     * batch's. MySQL and MariaDB read such a list as ranges of that index. {@link #pairs} sizes it to the batch.
     */
    static final String PAIRS = "(s.tenant_id, s.external_id) IN ((?, ?))";

    /**
     * The batch's sessions that exist and that no other transaction holds, locked. It reads the session table only:
     * its reasons to refuse a message are read by {@link #READ_SESSIONS}, after it.
     */
    static final String LOCK_FREE_SESSIONS =
            "SELECT s.tenant_id, s.external_id FROM chat_session s WHERE " + PAIRS + " FOR UPDATE SKIP LOCKED";

    /** The batch's sessions ({@link #PAIRS}). */
    static final String READ_SESSIONS =
            "SELECT s.id, s.tenant_id, s.external_id, s.version, s.event_seq, s.replied_version, s.failed_version, "
                    + "s.oldest_unanswered_at, s.last_message_at, " + SessionRules.EFFECTIVE_POLICY + " AS policy, "
                    + SessionRules.LEASE_LIVE + " AS generating, " + """
                   EXISTS (SELECT 1 FROM debounce_timer t WHERE t.session_id = s.id) AS armed,
                   UTC_TIMESTAMP(6) AS now
              FROM chat_session s WHERE\s""" + PAIRS;

    static final String FIND_KEYS = """
            SELECT m.session_id, m.idempotency_key, m.message_uid, m.version, m.body_sha256
              FROM chat_message m WHERE m.session_id IN (?) AND m.idempotency_key IN (?)""";

    /**
     * The batch's sessions take their new version, event seq and message times, in one statement: per column a
     * {@code CASE} over the batch's ids ({@link #BUMP_CASE}, {@link #BUMP_TIME_CASE}), the rows named by id on the
     * primary key ({@link LockedById}), so it touches the rows {@link #LOCK_SESSIONS} locked and no
     * other. Its {@code %s} are the four columns' cases and the id list ({@link #bump}).
     */
    static final String BUMP_SESSIONS = "UPDATE " + LockedById.SESSIONS + """

               SET s.version = CASE s.id %s END, s.event_seq = CASE s.id %s END,
                   s.oldest_unanswered_at = CASE s.id %s END, s.last_message_at = CASE s.id %s END
             WHERE s.id IN (%s)""";

    static final String BUMP_CASE = "WHEN ? THEN ? ";
    static final String BUMP_TIME_CASE = "WHEN ? THEN CAST(? AS DATETIME(6)) ";

    /** {@link #BUMP_SESSIONS} for {@code n} sessions; its parameters are {@link #bumpArgs}'. */
    static String bump(int n) {
        String numbers = BUMP_CASE.repeat(n);
        String times = BUMP_TIME_CASE.repeat(n);
        return BUMP_SESSIONS.formatted(numbers, numbers, times, times, "?, ".repeat(n - 1) + "?");
    }

    static final String INSERT_MESSAGES = """
            INSERT INTO chat_message (message_uid, session_id, role, text, version, idempotency_key, body_sha256, created_at)
            VALUES (?, ?, 'user', ?, ?, ?, ?, ?)""";

    static final String MESSAGE_ROW = "(?, ?, 'user', ?, ?, ?, ?, ?)";

    /** A message to accept, with the id chosen before any transaction. */
    record Item(String tenant, MessageRequest request, String messageId) {}

    /**
     * What a message of the batch is answered: accepted (perhaps a replay), refused, or neither: its session's row was
     * held by another writer, nothing of it was stored, and it goes alone.
     */
    record Outcome(MessageAcceptance.Accepted accepted, ApiProblem refused) {
        static final Outcome ALONE = new Outcome(null, null);

        boolean alone() {
            return accepted == null && refused == null;
        }
    }

    private record Key(String tenant, String sessionId) implements Comparable<Key> {
        @Override
        public int compareTo(Key o) {
            int c = tenant.compareTo(o.tenant);
            return c != 0 ? c : sessionId.compareTo(o.sessionId);
        }
    }

    private record StoredKey(long sessionPk, String key) {}

    private record Stored(MessageAcceptance.Accepted answer, String bodySha256) {}

    /** A session as the messages of the batch decided so far leave it. */
    private static final class Session {
        long id;
        long version;
        long eventSeq;
        long repliedVersion;
        long failedVersion;
        Instant oldest;
        Instant latest;
        String policy;
        boolean generating;
        boolean armed;
        int accepted;
    }

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final String defaultPolicy;
    private final IngestSettings.Limits limits;
    /**
     * The longest the batch waits to create its new sessions (for one created meanwhile by another writer): far above
     * a healthy writer's hold (milliseconds), far below what a POST may take.
     */
    private final Duration lockWait;

    BatchAcceptance(
            JdbcTemplate jdbc,
            TransactionTemplate tx,
            String defaultPolicy,
            IngestSettings.Limits limits,
            Duration lockWait) {
        this.jdbc = jdbc;
        this.tx = new TransactionTemplate(tx.getTransactionManager(), tx);
        this.tx.setIsolationLevel(TransactionDefinition.ISOLATION_READ_COMMITTED);
        this.defaultPolicy = defaultPolicy;
        this.limits = limits;
        this.lockWait = lockWait;
    }

    /**
     * @param written run after the batch's last statement, before its commit
     * @return the outcome of each item, in the items' order, once the batch committed
     * @throws RuntimeException any failure of the batch: nothing of it may be assumed stored or not
     */
    List<Outcome> acceptAll(List<Item> items, Runnable written) {
        return tx.execute(status -> {
            List<Outcome> outcomes = decideAndWrite(items);
            written.run();
            return outcomes;
        });
    }

    private List<Outcome> decideAndWrite(List<Item> items) {
        TreeMap<Key, Session> sessions = new TreeMap<>();
        boolean keyed = false;
        for (Item item : items) {
            sessions.put(new Key(item.tenant(), item.request().sessionId()), null);
            keyed |= item.request().idempotencyKey() != null;
        }

        Instant[] now = new Instant[1];
        lockAndRead(sessions, now);

        // a key stored, or taken by an earlier message of this batch: its answer and the body it was taken with
        Map<StoredKey, Stored> byKey = keyed ? storedKeys(items, sessions) : new HashMap<>();

        List<Outcome> outcomes = new ArrayList<>(items.size());
        List<Object> messageArgs = new ArrayList<>();
        List<SessionEvents.ReservedEvent> events = new ArrayList<>();
        for (Item item : items) {
            MessageRequest request = item.request();
            Session s = sessions.get(new Key(item.tenant(), request.sessionId()));
            if (s == null) { // held by another writer
                outcomes.add(Outcome.ALONE);
                continue;
            }
            StoredKey key = request.idempotencyKey() == null ? null : new StoredKey(s.id, request.idempotencyKey());
            Stored stored = key == null ? null : byKey.get(key);
            if (stored != null) {
                outcomes.add(
                        stored.bodySha256().equals(request.bodySha256())
                                ? new Outcome(stored.answer(), null)
                                : new Outcome(null, MessageAcceptance.keyReused()));
                continue;
            }
            long version = s.version + 1;
            if (version - s.repliedVersion > limits.maxUnanswered()) {
                outcomes.add(
                        new Outcome(null, MessageAcceptance.tooManyUnanswered(limits, s.failedVersion >= s.version)));
                continue;
            }
            boolean pending = s.version > s.repliedVersion && s.version > s.failedVersion;
            if ("reject".equals(s.policy) && (s.generating || s.armed || pending)) {
                outcomes.add(new Outcome(null, MessageAcceptance.sessionBusy()));
                continue;
            }
            Instant at = MessageTimes.next(now[0], s.latest);
            s.accepted++;
            s.version = version;
            s.eventSeq++;
            s.latest = at;
            if (s.oldest == null) {
                s.oldest = at;
            }
            Collections.addAll(
                    messageArgs,
                    item.messageId(),
                    s.id,
                    request.text(),
                    version,
                    request.idempotencyKey(),
                    request.bodySha256(),
                    DbTime.utc(at));
            Map<String, Object> data = new LinkedHashMap<>();
            data.put("messageId", item.messageId());
            data.put("version", version);
            data.put("text", request.text());
            events.add(new SessionEvents.ReservedEvent(
                    s.id, s.eventSeq, SessionEvents.Event.of("message.accepted", null, data)));
            if (key != null) {
                byKey.put(
                        key, new Stored(replay(request.sessionId(), item.messageId(), version), request.bodySha256()));
            }
            outcomes.add(new Outcome(
                    new MessageAcceptance.Accepted(
                            s.id, request.sessionId(), item.messageId(), version, at, s.oldest, false, s.policy),
                    null));
        }
        if (events.isEmpty()) {
            return outcomes;
        }

        List<Session> bumped =
                sessions.values().stream().filter(s -> s.accepted > 0).toList();
        jdbc.update(bump(bumped.size()), bumpArgs(bumped).toArray());
        jdbc.update(rows(INSERT_MESSAGES, MESSAGE_ROW, ", " + MESSAGE_ROW, events.size()), messageArgs.toArray());
        SessionEvents.insertReserved(jdbc, events);
        return outcomes;
    }

    /**
     * Steps 1–3 of the class comment: locks the batch's free existing sessions, reads them, creates and reads the new
     * ones, and leaves in {@code sessions} only those this transaction holds (a held session is removed: its messages
     * go alone); {@code now[0]} gets the database time.
     */
    private void lockAndRead(TreeMap<Key, Session> sessions, Instant[] now) {
        List<Key> batch = List.copyOf(sessions.keySet());
        Set<Key> free = new HashSet<>();
        jdbc.query(
                pairs(LOCK_FREE_SESSIONS, batch.size()),
                rs -> {
                    free.add(new Key(rs.getString("tenant_id"), rs.getString("external_id")));
                },
                pairArgs(List.of(), batch));
        read(sessions, batch, now);
        Set<Key> held = new HashSet<>();
        List<Key> missing = new ArrayList<>();
        sessions.forEach((k, s) -> {
            if (s == null) {
                missing.add(k);
            } else if (!free.contains(k)) {
                held.add(k);
            }
        });
        if (!missing.isEmpty()) {
            LockWait.update( // in key order: the map is sorted
                    jdbc,
                    lockWait,
                    rows(LOCK_SESSIONS, LOCK_ROW, ", " + LOCK_ROW, missing.size()),
                    pairArgs(List.of(), missing));
            read(sessions, missing, now);
            for (Key k : missing) {
                if (sessions.get(k) == null) {
                    throw new IllegalStateException("session " + k + " locked but not read");
                }
            }
        }
        held.forEach(sessions::remove);
    }

    /**
     * {@link #READ_SESSIONS} for {@code keys}: fills in each of them that exists, and {@code now[0]} with the database
     * time.
     */
    private void read(Map<Key, Session> sessions, List<Key> keys, Instant[] now) {
        jdbc.query(
                pairs(READ_SESSIONS, keys.size()),
                rs -> {
                    Key k = new Key(rs.getString("tenant_id"), rs.getString("external_id"));
                    Session s = new Session();
                    s.id = rs.getLong("id");
                    s.version = rs.getLong("version");
                    s.eventSeq = rs.getLong("event_seq");
                    s.repliedVersion = rs.getLong("replied_version");
                    s.failedVersion = rs.getLong("failed_version");
                    s.oldest = DbTime.instant(rs, "oldest_unanswered_at");
                    s.latest = DbTime.instant(rs, "last_message_at");
                    s.policy = rs.getString("policy");
                    s.generating = rs.getBoolean("generating");
                    s.armed = rs.getBoolean("armed");
                    sessions.put(k, s);
                    now[0] = DbTime.instant(rs, "now");
                },
                pairArgs(List.of(defaultPolicy), keys));
    }

    /** {@code sql} with its {@link #PAIRS} list of {@code n} pairs. */
    static String pairs(String sql, int n) {
        return rows(sql, "IN ((?, ?)", ", (?, ?)", n);
    }

    /** {@code before}, then tenant and session id of each key: the parameters of a {@link #PAIRS} statement. */
    private static Object[] pairArgs(List<Object> before, List<Key> keys) {
        List<Object> args = new ArrayList<>(before.size() + 2 * keys.size());
        args.addAll(before);
        keys.forEach(k -> Collections.addAll(args, k.tenant(), k.sessionId()));
        return args.toArray();
    }

    /** The parameters of {@link #bump}: (id, value) per session for each column in turn, then the ids. */
    private static List<Object> bumpArgs(List<Session> bumped) {
        List<Object> args = new ArrayList<>(9 * bumped.size());
        bumped.forEach(s -> Collections.addAll(args, s.id, s.version));
        bumped.forEach(s -> Collections.addAll(args, s.id, s.eventSeq));
        bumped.forEach(s -> Collections.addAll(args, s.id, DbTime.utc(s.oldest)));
        bumped.forEach(s -> Collections.addAll(args, s.id, DbTime.utc(s.latest)));
        bumped.forEach(s -> args.add(s.id));
        return args;
    }

    private Map<StoredKey, Stored> storedKeys(List<Item> items, Map<Key, Session> sessions) {
        Set<Long> pks = new LinkedHashSet<>();
        Set<String> keys = new LinkedHashSet<>();
        for (Item item : items) {
            Session s = sessions.get(new Key(item.tenant(), item.request().sessionId()));
            if (item.request().idempotencyKey() != null && s != null) {
                pks.add(s.id);
                keys.add(item.request().idempotencyKey());
            }
        }
        if (pks.isEmpty()) {
            return new HashMap<>();
        }
        Map<Long, String> sessionIds = new HashMap<>();
        sessions.forEach((k, s) -> sessionIds.put(s.id, k.sessionId()));
        List<Object> args = new ArrayList<>(pks);
        args.addAll(keys);
        Map<StoredKey, Stored> found = new HashMap<>();
        jdbc.query(
                in(in(FIND_KEYS, "m.session_id IN (?)", pks.size()), "m.idempotency_key IN (?)", keys.size()),
                rs -> {
                    long pk = rs.getLong("session_id");
                    found.put(
                            new StoredKey(pk, rs.getString("idempotency_key")),
                            new Stored(
                                    replay(sessionIds.get(pk), rs.getString("message_uid"), rs.getLong("version")),
                                    rs.getString("body_sha256")));
                },
                args.toArray());
        return found;
    }

    /** The answer to a replay, as {@link MessageAcceptance} gives it. */
    private static MessageAcceptance.Accepted replay(String sessionId, String messageId, long version) {
        return new MessageAcceptance.Accepted(0, sessionId, messageId, version, null, null, true, null);
    }

    /** {@code sql} with its one row {@code first} followed by {@code n - 1} times {@code next}. */
    static String rows(String sql, String first, String next, int n) {
        if (!sql.contains(first)) {
            throw new IllegalArgumentException(first + " not in " + sql);
        }
        return sql.replace(first, first + next.repeat(n - 1));
    }

    /** {@code sql} with its list {@code list} (ending in {@code (?)}) of {@code n} parameters. */
    static String in(String sql, String list, int n) {
        return rows(sql, list, "", 1).replace(list, list.substring(0, list.length() - 2) + "?, ".repeat(n - 1) + "?)");
    }
}
