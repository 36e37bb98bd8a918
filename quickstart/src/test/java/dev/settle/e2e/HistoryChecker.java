package dev.settle.e2e;

import dev.settle.testsupport.WebhookReceiver;
import org.springframework.jdbc.core.JdbcTemplate;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * Judges a chaos run's complete history — every 202, every committed row, every webhook the receiver saw —
 * against Settle's promises, and names the failing session of every violation.
 */
final class HistoryChecker {
    private final JdbcTemplate jdbc;
    private final Duration maxWait;
    private final Duration ttl;
    final List<String> violations = new ArrayList<>();
    final List<Long> takeoverMillis = new ArrayList<>();
    /** Of the takeovers measured: from the kill to the lease's expiry, and from the expiry to the next turn. */
    final List<Long> untilExpiryMillis = new ArrayList<>();

    final List<Long> afterExpiryMillis = new ArrayList<>();
    /**
     * Leases held at a kill by a live instance (renewed after it) whose turn was later abandoned: lost for another
     * reason (a freeze, a broken connection, a starved renewal), taken over by the same rule, not judged against the kill.
     */
    int abandonedByLiveHolders;

    HistoryChecker(JdbcTemplate jdbc, Duration maxWait, Duration ttl) {
        this.jdbc = jdbc;
        this.maxWait = maxWait;
        this.ttl = ttl;
    }

    record Reply(String replyId, long from, long to, String text, LocalDateTime createdAt, long turnId) {}

    void check(
            List<String> sessions,
            ChaosWorkload workload,
            List<WebhookReceiver.Delivery> received,
            List<ChaosFaults.Kill> kills) {
        Map<String, List<ChaosWorkload.Accepted>> accepted =
                workload.accepted.values().stream().collect(Collectors.groupingBy(ChaosWorkload.Accepted::sessionId));
        Map<String, List<WebhookReceiver.Delivery>> acked = new HashMap<>();
        Map<String, String> contentById = new HashMap<>();
        for (WebhookReceiver.Delivery d : received) {
            if (!d.acknowledged() || d.json() == null) {
                continue;
            }
            String previous =
                    contentById.putIfAbsent(d.webhookId(), d.json().get("data").toString());
            if (previous != null && !previous.equals(d.json().get("data").toString())) {
                violations.add("webhook-id " + d.webhookId() + " acknowledged twice with different content");
            }
            acked.computeIfAbsent(d.json().path("data").path("sessionId").asString(), k -> new ArrayList<>())
                    .add(d);
        }
        for (String s : sessions) {
            checkSession(
                    s,
                    accepted.getOrDefault(s, List.of()),
                    acked.getOrDefault(s, List.of()),
                    workload.bookingsPerSession.getOrDefault(s, 0));
        }
        checkTakeovers(kills);
    }

    private void checkSession(
            String s, List<ChaosWorkload.Accepted> accepted, List<WebhookReceiver.Delivery> acked, int bookings) {
        long version = jdbc.queryForObject("SELECT version FROM chat_session WHERE external_id = ?", Long.class, s);
        int stored = jdbc.queryForObject("""
                SELECT COUNT(*) FROM chat_message m JOIN chat_session s ON s.id = m.session_id
                 WHERE s.external_id = ? AND m.role = 'user'""", Integer.class, s);
        if (stored != accepted.size() || version != accepted.size()) {
            violations.add(
                    s + ": " + accepted.size() + " messages accepted, " + stored + " stored, version " + version);
        }
        List<Reply> replies = replies(s);
        // every accepted message covered by exactly one reply: the replies partition 1..version
        long next = 1;
        for (Reply r : replies) {
            if (r.from() != next) {
                violations.add(s + ": reply " + r.replyId() + " covers " + r.from() + "-" + r.to()
                        + ", expected to start at " + next);
            }
            next = r.to() + 1;
        }
        if (next != version + 1) {
            violations.add(s + ": replies cover up to " + (next - 1) + " of " + version + " versions");
        }
        checkNotStale(s, replies);
        for (Reply r : replies) {
            checkPersisted(s, r);
        }
        checkStreamsEnd(s);
        // every reply delivered, per-session order held
        Map<String, WebhookReceiver.Delivery> firstAck = new HashMap<>();
        for (WebhookReceiver.Delivery d : acked) {
            if ("reply.created".equals(d.json().get("type").asString())) {
                firstAck.merge(d.webhookId(), d, (a, b) -> a.receivedAt().isBefore(b.receivedAt()) ? a : b);
            }
        }
        for (Reply r : replies) {
            if (!firstAck.containsKey("wh_" + r.replyId())) {
                violations.add(s + ": reply " + r.replyId() + " was never acknowledged by the receiver");
            }
        }
        // and no webhook of a reply that was never committed (a discarded turn's reply is never delivered)
        java.util.Set<String> committed = replies.stream().map(Reply::replyId).collect(Collectors.toSet());
        firstAck.values().stream()
                .map(d -> d.json().get("data").get("replyId").asString())
                .filter(id -> !committed.contains(id))
                .sorted()
                .forEach(id -> violations.add(
                        s + ": webhook of reply " + id + " delivered, but that reply was never committed"));
        List<WebhookReceiver.Delivery> ordered = firstAck.values().stream()
                .sorted(Comparator.comparing(WebhookReceiver.Delivery::receivedAt))
                .toList();
        for (int i = 1; i < ordered.size(); i++) {
            if (ordered.get(i).json().get("data").get("coversVersion").asLong()
                    <= ordered.get(i - 1)
                            .json()
                            .get("data")
                            .get("coversVersion")
                            .asLong()) {
                violations.add(s + ": reply for "
                        + ordered.get(i).json().get("data").get("coversVersion") + " delivered after the one for "
                        + ordered.get(i - 1).json().get("data").get("coversVersion"));
            }
        }
        // side effects: exactly the intended ledger rows
        int rows = jdbc.queryForObject("""
                SELECT COUNT(*) FROM ledger_entry l JOIN chat_session s ON s.id = l.session_id WHERE s.external_id = ?""", Integer.class, s);
        int distinct = jdbc.queryForObject("""
                SELECT COUNT(DISTINCT l.amount) FROM ledger_entry l JOIN chat_session s ON s.id = l.session_id
                 WHERE s.external_id = ?""", Integer.class, s);
        if (rows != bookings || distinct != bookings) {
            violations.add(s + ": " + bookings + " bookings asked for, " + rows + " ledger rows (" + distinct
                    + " distinct amounts)");
        }
    }

    /** The session's replies, in version order. */
    private List<Reply> replies(String s) {
        return jdbc.query(
                """
                SELECT m.message_uid, m.covers_from, m.covers_version, m.text, m.created_at, m.turn_id
                  FROM chat_message m JOIN chat_session s ON s.id = m.session_id
                 WHERE s.external_id = ? AND m.role = 'assistant' ORDER BY m.covers_version""",
                (rs, i) -> new Reply(
                        rs.getString(1),
                        rs.getLong(2),
                        rs.getLong(3),
                        rs.getString(4),
                        rs.getObject(5, LocalDateTime.class),
                        rs.getLong(6)),
                s);
    }

    /**
     * A reply may answer fewer versions than exist only when it committed past max-wait. Whether a newer message
     * existed when the reply committed is judged by the session's event seqs, not by clocks: an accept reserves its
     * {@code message.accepted} seq while it holds the session row, and a reply's commit reserves its
     * {@code reply.created} seq by the statement that checks the version, under the same row lock, so seq order is
     * the order in which they held the row, and committed. (A message's {@code created_at} is the database time when
     * its accept's statement began, which may precede a reply that held the row while the accept waited for it.)
     */
    void checkNotStale(String s) {
        checkNotStale(s, replies(s));
    }

    private void checkNotStale(String s, List<Reply> replies) {
        Map<Long, Long> acceptedSeq = new HashMap<>();
        Map<String, Long> replySeq = new HashMap<>();
        jdbc.query(
                """
                SELECT e.seq, e.type, e.data FROM session_event e JOIN chat_session s ON s.id = e.session_id
                 WHERE s.external_id = ? AND e.type IN ('message.accepted', 'reply.created')""",
                rs -> {
                    var data = SseClient.JSON.readTree(rs.getString("data"));
                    if ("message.accepted".equals(rs.getString("type"))) {
                        acceptedSeq.put(data.get("version").asLong(), rs.getLong("seq"));
                    } else {
                        replySeq.put(data.get("replyId").asString(), rs.getLong("seq"));
                    }
                },
                s);
        for (Reply r : replies) {
            Long committed = replySeq.get(r.replyId());
            if (committed == null) {
                violations.add(s + ": reply " + r.replyId() + " has no reply.created event");
                continue;
            }
            List<Long> newer = acceptedSeq.entrySet().stream()
                    .filter(e -> e.getKey() > r.to() && e.getValue() < committed)
                    .map(Map.Entry::getKey)
                    .sorted()
                    .toList();
            LocalDateTime oldest = jdbc.queryForObject("""
                    SELECT m.created_at FROM chat_message m JOIN chat_session s ON s.id = m.session_id
                     WHERE s.external_id = ? AND m.version = ?""", LocalDateTime.class, s, r.from());
            if (!newer.isEmpty() && r.createdAt().isBefore(oldest.plus(maxWait))) {
                violations.add(s + ": stale reply " + r.replyId() + " for " + r.from() + "-" + r.to()
                        + " committed before max-wait although newer messages existed (versions " + newer
                        + " accepted before its event seq " + committed + ")");
            }
        }
    }

    /** The events that end a turn's stream. */
    static final java.util.Set<String> ENDINGS =
            java.util.Set.of("reply.created", "turn.discarded", "turn.failed", "turn.abandoned");

    /**
     * Every turn a client saw start (its stream has events) is seen to end: its events, in seq order, hold exactly one
     * ending event, and it is their last — whether the turn replied, was discarded, failed, or was abandoned by a
     * killed worker or an error.
     */
    void checkStreamsEnd(String s) {
        Map<Long, List<String>> byTurn = new java.util.LinkedHashMap<>();
        jdbc.query(
                """
                SELECT e.turn_id, e.type FROM session_event e JOIN chat_session s ON s.id = e.session_id
                 WHERE s.external_id = ? AND e.turn_id IS NOT NULL ORDER BY e.seq""",
                rs -> {
                    byTurn.computeIfAbsent(rs.getLong(1), t -> new ArrayList<>())
                            .add(rs.getString(2));
                },
                s);
        byTurn.forEach((turn, types) -> {
            long endings = types.stream().filter(ENDINGS::contains).count();
            if (endings != 1 || !ENDINGS.contains(types.getLast())) {
                violations.add(s + ": turn " + turn + "'s stream has " + endings + " ending events and ends with "
                        + types.subList(Math.max(0, types.size() - 3), types.size()));
            }
        });
    }

    private void checkPersisted(String s, Reply r) {
        StringBuilder persisted = new StringBuilder();
        for (String data : jdbc.queryForList(
                "SELECT data FROM session_event WHERE turn_id = ? AND type = 'reply.delta' ORDER BY chunk_seq",
                String.class,
                r.turnId())) {
            persisted.append(SseClient.JSON.readTree(data).get("text").asString());
        }
        if (!persisted.toString().equals(r.text())) {
            violations.add(s + ": reply " + r.replyId() + " text differs from its persisted stream");
        }
    }

    /**
     * A session whose holder was killed mid-turn is taken over within TTL + 2 s. Judged: every lease held at the
     * kill, never renewed after it, whose turn was closed as abandoned — it expired within the TTL of the kill.
     */
    void checkTakeovers(List<ChaosFaults.Kill> kills) {
        for (ChaosFaults.Kill kill : kills) {
            for (Map.Entry<Long, String> lease : kill.leases().entrySet()) {
                Integer abandoned = jdbc.queryForObject("""
                        SELECT COUNT(*) FROM chat_turn WHERE session_id = ? AND lease_token = ? AND reason LIKE 'abandoned%'""", Integer.class, lease.getKey(), lease.getValue());
                if (abandoned == 0) {
                    continue; // that lease belonged to a live instance, or its turn had ended
                }
                if (kill.renewed().contains(lease.getKey())) {
                    abandonedByLiveHolders++; // its holder was alive after the kill
                    continue;
                }
                LocalDateTime next = jdbc.queryForObject(
                        """
                        SELECT MIN(started_at) FROM chat_turn WHERE session_id = ? AND lease_token <> ?
                           AND started_at > ?""",
                        LocalDateTime.class,
                        lease.getKey(),
                        lease.getValue(),
                        LocalDateTime.ofInstant(kill.at().minusSeconds(1), java.time.ZoneOffset.UTC));
                if (next == null) {
                    violations.add("session " + lease.getKey() + ": never taken over after the kill at " + kill.at());
                    continue;
                }
                long ms = Duration.between(kill.at(), next.toInstant(java.time.ZoneOffset.UTC))
                        .toMillis();
                takeoverMillis.add(ms);
                Instant expiry = kill.expiries().get(lease.getKey());
                if (expiry != null) {
                    untilExpiryMillis.add(Duration.between(kill.at(), expiry).toMillis());
                    afterExpiryMillis.add(Duration.between(expiry, next.toInstant(java.time.ZoneOffset.UTC))
                            .toMillis());
                }
                if (ms > ttl.plusSeconds(2).toMillis()) {
                    slowTakeovers++;
                    violations.add("session " + lease.getKey() + ": taken over " + ms
                            + " ms after the kill at " + kill.at() + " (limit TTL + 2 s)"
                            + (expiry == null
                                    ? ""
                                    : "; its lease expired "
                                            + Duration.between(kill.at(), expiry)
                                                    .toMillis() + " ms after the kill"));
                }
            }
        }
    }

    /**
     * The slowest acceptable answer to a POST outside the broker outages: the API answers 202 once the message is
     * committed, and never waits on a turn (no lock a turn holds, no model call, no tool). Override with
     * {@code -Dsettle.chaos.post-limit-ms} only to measure an overloaded machine; the suite runs the default.
     */
    static final Duration POST_LIMIT = Duration.ofMillis(Long.getLong("settle.chaos.post-limit-ms", 1500));

    /**
     * POSTs that started this early in the run are not judged: the first ones of a cold system wait up to the Kafka
     * producer's max.block.ms (2 s) for the new topic's metadata after their commit (seen at 2.18 s on a quiet
     * machine), which is a start-up cost, not a wait on a turn.
     */
    static final Duration POST_GRACE = Duration.ofSeconds(5);

    /** POSTs judged by {@link #checkPostLatency}, and the slowest of them (ms). */
    long postsJudged;
    /** Judged POSTs answered after {@link #POST_LIMIT}; takeovers later than TTL + 2 s. */
    long slowJudgedPosts;

    long slowTakeovers;

    long slowestJudgedPost;

    /**
     * Every POST attempt that started outside a broker outage answered within {@link #POST_LIMIT}. Not judged: the
     * first {@link #POST_GRACE} of the run, a POST that started during an outage (bounded by its own check), or that overlapped an agent freeze (a JVM
     * frozen inside a transaction keeps its locks until it resumes, a stall of the process, not of a turn).
     *
     * @param witness what was seen holding POSTs up, named in each violation; null when not watched
     * @param origin the start of the run (System.nanoTime), for the times named in a violation
     */
    void checkPostLatency(List<ChaosWorkload.Post> posts, ChaosFaults faults, StallWitness witness, long origin) {
        List<long[]> outages = faults.outages();
        List<long[]> freezes = faults.freezes();
        List<ChaosWorkload.Post> all;
        synchronized (posts) {
            all = List.copyOf(posts);
        }
        for (ChaosWorkload.Post p : all) {
            if (ChaosFaults.during(p, outages)
                    || freezes.stream().anyMatch(f -> ChaosFaults.overlaps(p, f))
                    || inGrace(p.startNanos() - origin)) {
                continue;
            }
            postsJudged++;
            slowestJudgedPost = Math.max(slowestJudgedPost, p.millis());
            if (p.millis() > POST_LIMIT.toMillis()) {
                slowJudgedPosts++;
                List<String> during = faults.faultsDuring(p, origin);
                violations.add(p.sessionId() + ": a POST started " + (p.startNanos() - origin) / 1_000_000
                        + " ms into the run, outside any broker outage, answered " + p.status() + " after " + p.millis()
                        + " ms (limit " + POST_LIMIT.toMillis() + " ms); faults in progress: "
                        + (during.isEmpty() ? "none" : String.join(", ", during))
                        + (witness == null
                                ? ""
                                : "; seen during it: " + witness.during(p.startNanos(), p.startNanos() + p.nanos())));
            }
        }
    }

    private static boolean inGrace(long sinceOrigin) {
        return sinceOrigin >= 0 && sinceOrigin < POST_GRACE.toNanos();
    }

    static long percentile(List<Long> values, double p) {
        if (values.isEmpty()) {
            return -1;
        }
        List<Long> sorted = values.stream().sorted().toList();
        return sorted.get(Math.min(sorted.size() - 1, (int) Math.ceil(p * sorted.size()) - 1));
    }
}
