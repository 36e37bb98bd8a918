package dev.settle.ingest.accept;

import dev.settle.boot.PlatformThreadTransactions;
import dev.settle.ingest.IngestSettings;
import dev.settle.ingest.http.ApiProblem;
import dev.settle.schema.DbTime;
import dev.settle.schema.SessionEvents;
import dev.settle.schema.SessionRules;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.dao.DataAccessResourceFailureException;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.dao.RecoverableDataAccessException;
import org.springframework.dao.TransientDataAccessException;
import org.springframework.http.HttpStatus;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.TransactionException;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * "accepted means durable" (docs/PROMISES.md): a message is stored, and the session's version bumped, in one short
 * transaction; the caller answers 202 only after it committed.
 *
 * <ol>
 *   <li>With an Idempotency-Key, look for the message it already created: same text → the same answer again,
 *       other text → 422. Nothing is written.</li>
 *   <li>Create the session or bump its version and reserve the seq of its {@code message.accepted} event
 *       ({@link #UPSERT_SESSION}); the row lock serialises every writer of this session until commit.</li>
 *   <li>Read back the version and the database time of this message ({@link #READ_SESSION}).</li>
 *   <li>More than {@code max-unanswered} messages unanswered with this one → 429 with Retry-After, rolled
 *       back like any refusal; exact, because the session row is locked since step 2.</li>
 *   <li>Under policy {@code reject} (the session's, else its tenant's, else the deployment's), refuse (409) while the session is generating, has a timer armed or has
 *       unanswered messages: the transaction rolls back and nothing is stored.</li>
 *   <li>Insert the message ({@link #INSERT_MESSAGE}); the unique index on (session, idempotency key) stops a
 *       concurrent replay: the transaction rolls back (the version bump with it) and step 1 answers.</li>
 *   <li>Append {@code message.accepted} to the session's event log, in the same transaction.</li>
 * </ol>
 */
@Component
public class MessageAcceptance {
    private static final Logger log = LoggerFactory.getLogger(MessageAcceptance.class);
    static final String FIND_BY_KEY = """
            SELECT m.message_uid, m.version, m.body_sha256
              FROM chat_message m JOIN chat_session s ON s.id = m.session_id
             WHERE s.tenant_id = ? AND s.external_id = ? AND m.idempotency_key = ?""";

    static final String UPSERT_SESSION = """
            INSERT INTO chat_session (tenant_id, external_id, version, event_seq, oldest_unanswered_at, last_message_at, created_at)
            VALUES (?, ?, 1, 1, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))
            ON DUPLICATE KEY UPDATE
                version = version + 1,
                event_seq = event_seq + 1,
                oldest_unanswered_at = COALESCE(oldest_unanswered_at, UTC_TIMESTAMP(6)),
                last_message_at =\s""" + MessageTimes.NEXT;

    /**
     * {@code pending}: the session had work before this message ({@link SessionRules#HAS_WORK} at the version before
     * its bump).
     */
    static final String READ_SESSION =
            "SELECT s.id, s.version, s.event_seq, s.oldest_unanswered_at, s.last_message_at, "
                    + SessionRules.EFFECTIVE_POLICY + " AS policy, "
                    + SessionRules.LEASE_LIVE + " AS generating, " + """
                   s.version - s.replied_version AS unanswered,
                   s.failed_version >= s.version - 1 AS failed,
                   EXISTS (SELECT 1 FROM debounce_timer t WHERE t.session_id = s.id) AS armed,
                   (s.version - 1 > s.replied_version AND s.version - 1 > s.failed_version) AS pending
              FROM chat_session s WHERE s.tenant_id = ? AND s.external_id = ?""";

    static final String INSERT_MESSAGE = """
            INSERT INTO chat_message (message_uid, session_id, role, text, version, idempotency_key, body_sha256, created_at)
            VALUES (?, ?, 'user', ?, ?, ?, ?, ?)""";

    /**
     * What the client is told; {@code replay} when an Idempotency-Key answered from the stored message;
     * {@code policy} the session's effective policy as the accept read it (null when it read none).
     */
    public record Accepted(
            long sessionPk,
            String sessionId,
            String messageId,
            long version,
            Instant acceptedAt,
            Instant oldestUnansweredAt,
            boolean replay,
            String policy) {}

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final String defaultPolicy;
    private final IngestSettings.Limits limits;
    /** null: every message is accepted alone ({@code settle.ingest.group-commit} off) */
    private final GroupCommit groupCommit;

    @Autowired
    public MessageAcceptance(JdbcTemplate jdbc, TransactionTemplate tx, IngestSettings settings, MeterRegistry meters) {
        this.jdbc = jdbc;
        // a message written alone runs on a platform thread (AcceptTransactionThreadTest); a batch on its leader's
        this.tx = PlatformThreadTransactions.of(tx);
        this.defaultPolicy = settings.policy().defaultPolicy();
        this.limits = settings.limits();
        this.groupCommit = settings.ingest().groupCommit()
                ? new GroupCommit(
                        new BatchAcceptance(
                                jdbc,
                                tx,
                                defaultPolicy,
                                limits,
                                settings.ingest().groupCommitLockWait()),
                        this::once,
                        settings.ingest().groupCommitMax(),
                        meters)
                : null;
    }

    public MessageAcceptance(JdbcTemplate jdbc, TransactionTemplate tx, IngestSettings settings) {
        this(jdbc, tx, settings, new SimpleMeterRegistry());
    }

    /**
     * Accepts once, even when the database connection dies under it: the message id
     * is chosen before the transaction, so after a failure whose outcome is unknown (a lost connection, a
     * failed commit) the message is looked up by that id — committed means accepted, absent means the
     * transaction rolled back and is tried again (after a short random pause), up to {@link #ATTEMPTS} times.
     *
     * <p>The look-up can fail too (its connection dies as well): the outcome then stays unknown, never "nothing was
     * accepted", and the next attempt looks again before it writes anything. If every look fails, the answer says that the message may
     * have been stored ({@link OutcomeUnknown}), never that nothing was.
     *
     * <p>With group commit ({@link GroupCommit}) the first attempt is the message's batch; if the batch fails as a
     * whole, the message goes on alone from an unknown outcome: looked up first, then written alone.
     */
    public Accepted accept(String tenant, MessageRequest request) {
        String messageId = "msg_" + UUID.randomUUID();
        if (groupCommit == null) {
            return acceptAlone(tenant, request, messageId, null);
        }
        return switch (groupCommit.submit(new BatchAcceptance.Item(tenant, request, messageId))) {
            case GroupCommit.Done done -> done.accepted();
            case GroupCommit.Refused refused -> throw refused.problem();
            case GroupCommit.Alone alone -> acceptAlone(tenant, request, messageId, alone.cause());
            case GroupCommit.Lead lead -> throw new IllegalStateException("a leader is never told to lead");
        };
    }

    /** @param unknown the failure of an earlier attempt at {@code messageId} whose outcome is not settled, or null */
    private Accepted acceptAlone(String tenant, MessageRequest request, String messageId, RuntimeException unknown) {
        for (int attempt = 1; attempt <= ATTEMPTS; attempt++) {
            if (unknown != null) {
                backOff(Math.max(1, attempt - 1));
                try {
                    Accepted committed = committed(messageId, request.sessionId());
                    if (committed != null) {
                        return committed;
                    }
                    unknown = null; // settled: it rolled back
                } catch (TransactionException
                        | RecoverableDataAccessException
                        | TransientDataAccessException
                        | DataAccessResourceFailureException lookupFailed) {
                    continue; // still unknown: look again before writing
                }
            }
            try {
                return acceptOnce(tenant, request, messageId);
            } catch (TransactionException
                    | RecoverableDataAccessException
                    | TransientDataAccessException
                    | DataAccessResourceFailureException failed) {
                unknown = failed;
            }
        }
        backOff(ATTEMPTS);
        try {
            Accepted committed = committed(messageId, request.sessionId());
            if (committed != null) {
                return committed;
            }
        } catch (TransactionException
                | RecoverableDataAccessException
                | TransientDataAccessException
                | DataAccessResourceFailureException lookupFailed) {
            throw new OutcomeUnknown(messageId, lookupFailed);
        }
        throw unknown;
    }

    /**
     * The database failed under an attempt and under every look-up after it: the message may be stored. Answered
     * 503 with Retry-After; the client retries with the same Idempotency-Key or reads the messages before sending
     * again.
     */
    public static final class OutcomeUnknown extends ApiProblem {
        public OutcomeUnknown(String messageId, Throwable cause) {
            super(
                    HttpStatus.SERVICE_UNAVAILABLE,
                    "outcome-unknown",
                    "the database failed while the message was being stored and is still unavailable; it may have been "
                            + "stored. Retry with the same Idempotency-Key (answered from the stored message if it was), "
                            + "or read GET /v1/sessions/{id}/messages before sending again",
                    1,
                    cause);
            log.warn("the outcome of storing {} is unknown: {}", messageId, cause.toString());
        }
    }

    static final int ATTEMPTS = 5;

    /**
     * A deadlock victim that retries at once meets the same partners again: wait a random 5–25 ms, doubling per
     * attempt, so the contenders spread out.
     */
    private static void backOff(int attempt) {
        long bound = 20L << Math.min(attempt - 1, 4);
        try {
            Thread.sleep(5 + java.util.concurrent.ThreadLocalRandom.current().nextLong(bound));
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    static final String BY_UID = """
            SELECT s.id, m.version, m.created_at, s.oldest_unanswered_at
              FROM chat_message m JOIN chat_session s ON s.id = m.session_id WHERE m.message_uid = ?""";

    private Accepted committed(String messageId, String sessionId) {
        List<Accepted> rows = jdbc.query(
                BY_UID,
                (rs, i) -> new Accepted(
                        rs.getLong("id"),
                        sessionId,
                        messageId,
                        rs.getLong("version"),
                        DbTime.instant(rs, "created_at"),
                        DbTime.instant(rs, "oldest_unanswered_at"),
                        false,
                        null),
                messageId);
        return rows.isEmpty() ? null : rows.getFirst();
    }

    /**
     * A batch of one: the first attempt of the one-message path, whose statements are fewer than a batch's;
     * {@code written} runs before its commit.
     */
    private BatchAcceptance.Outcome once(BatchAcceptance.Item item, Runnable written) {
        try {
            return new BatchAcceptance.Outcome(
                    acceptOnce(item.tenant(), item.request(), item.messageId(), written), null);
        } catch (ApiProblem refused) {
            return new BatchAcceptance.Outcome(null, refused);
        }
    }

    private Accepted acceptOnce(String tenant, MessageRequest request, String messageId) {
        return acceptOnce(tenant, request, messageId, () -> {});
    }

    private Accepted acceptOnce(String tenant, MessageRequest request, String messageId, Runnable written) {
        if (request.idempotencyKey() != null) {
            Accepted replay = replay(tenant, request);
            if (replay != null) {
                return replay;
            }
        }
        try {
            return tx.execute(status -> {
                Accepted accepted = insert(tenant, request, messageId);
                written.run();
                return accepted;
            });
        } catch (DuplicateKeyException raced) {
            // an earlier attempt of this very request committed after all (its commit finished after its
            // connection died): the retry collided with its message id
            Accepted ours = committed(messageId, request.sessionId());
            if (ours != null) {
                return ours;
            }
            Accepted replay = replay(tenant, request);
            if (replay == null) {
                throw raced;
            }
            return replay;
        }
    }

    private Accepted insert(String tenant, MessageRequest request, String messageId) {
        jdbc.update(UPSERT_SESSION, tenant, request.sessionId());
        record Row(
                long id,
                long version,
                long eventSeq,
                Instant oldest,
                Instant now,
                String policy,
                boolean busy,
                long unanswered,
                boolean failed) {}
        Row row = jdbc.queryForObject(
                READ_SESSION,
                (rs, i) -> new Row(
                        rs.getLong("id"),
                        rs.getLong("version"),
                        rs.getLong("event_seq"),
                        DbTime.instant(rs, "oldest_unanswered_at"),
                        DbTime.instant(rs, "last_message_at"),
                        rs.getString("policy"),
                        "reject".equals(rs.getString("policy"))
                                && (rs.getBoolean("generating") || rs.getBoolean("armed") || rs.getBoolean("pending")),
                        rs.getLong("unanswered"),
                        rs.getBoolean("failed")),
                defaultPolicy,
                tenant,
                request.sessionId());
        if (row.unanswered() > limits.maxUnanswered()) {
            // the version bump rolls back with the refusal
            throw tooManyUnanswered(limits, row.failed());
        }
        if (row.busy()) {
            // policy reject: nothing is stored, the version bump rolls back
            throw sessionBusy();
        }
        jdbc.update(
                INSERT_MESSAGE,
                messageId,
                row.id(),
                request.text(),
                row.version(),
                request.idempotencyKey(),
                request.bodySha256(),
                DbTime.utc(row.now()));
        Map<String, Object> event = new LinkedHashMap<>();
        event.put("messageId", messageId);
        event.put("version", row.version());
        event.put("text", request.text());
        // the upsert reserved this event's seq (event_seq + 1) under the row lock it holds until commit
        SessionEvents.insertReserved(
                jdbc, row.id(), row.eventSeq(), SessionEvents.Event.of("message.accepted", null, event));
        return new Accepted(
                row.id(), request.sessionId(), messageId, row.version(), row.now(), row.oldest(), false, row.policy());
    }

    private Accepted replay(String tenant, MessageRequest request) {
        List<Accepted> found = jdbc.query(
                FIND_BY_KEY,
                (rs, i) -> {
                    if (!rs.getString("body_sha256").equals(request.bodySha256())) {
                        throw keyReused();
                    }
                    return new Accepted(
                            0,
                            request.sessionId(),
                            rs.getString("message_uid"),
                            rs.getLong("version"),
                            null,
                            null,
                            true,
                            null);
                },
                tenant,
                request.sessionId(),
                request.idempotencyKey());
        return found.isEmpty() ? null : found.getFirst();
    }

    /**
     * The refusal of a message past {@code max-unanswered}. When the session's last turn failed at its version
     * (the model was down), nothing answers it until a retry or a new message, and this refusal is what keeps a
     * new message out: the detail says to ask for the retry instead of waiting.
     *
     * @param failed the session's last turn failed at its version
     */
    static ApiProblem tooManyUnanswered(IngestSettings.Limits limits, boolean failed) {
        String unanswered = "this session has " + limits.maxUnanswered() + " unanswered messages";
        return new ApiProblem(
                HttpStatus.TOO_MANY_REQUESTS,
                "too-many-unanswered",
                failed
                        ? unanswered + " and its last turn failed: POST /v1/sessions/{sessionId}/retry to have them"
                                + " answered, then send this message again"
                        : unanswered + "; retry when it has answered",
                Math.max(1, limits.unansweredRetryAfter().toSeconds()));
    }

    static ApiProblem sessionBusy() {
        return new ApiProblem(
                HttpStatus.CONFLICT,
                "session-busy",
                "this session is still answering earlier messages (policy reject); retry when it is idle");
    }

    static ApiProblem keyReused() {
        return new ApiProblem(
                HttpStatus.UNPROCESSABLE_CONTENT,
                "idempotency-key-reused",
                "this Idempotency-Key was already used with a different body");
    }
}
