package dev.settle.debounce;

import dev.settle.contracts.MessageAccepted;
import dev.settle.schema.DbTime;
import org.springframework.jdbc.core.simple.JdbcClient;

import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.util.Collection;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.atomic.AtomicLong;
import java.util.stream.Collectors;
import java.util.stream.IntStream;

/**
 * Writes chat_session rows the way ingest-api and agent-worker would, and reads debounce_timer back.
 * Session ids are unique across the whole test JVM, because every test class shares one session-ready topic.
 */
final class Sessions {
    private static final AtomicLong NEXT_ID = new AtomicLong(1_000_000);

    record Timer(Instant fireAt, Instant deadlineAt, long armedVersion, String armedBy, Instant armedAt) {}

    private final JdbcClient jdbc;

    Sessions(JdbcClient jdbc) {
        this.jdbc = jdbc;
    }

    Instant dbNow() {
        return jdbc.sql("SELECT UTC_TIMESTAMP(6)")
                .query(LocalDateTime.class)
                .single()
                .toInstant(ZoneOffset.UTC);
    }

    /** A session with no messages yet. */
    long create() {
        return insert(0, 0, 0, null, null, null, null);
    }

    long insert(
            long version,
            long repliedVersion,
            long failedVersion,
            Instant oldestUnansweredAt,
            Instant lastMessageAt,
            String leaseToken,
            Instant leaseExpiresAt) {
        long id = NEXT_ID.incrementAndGet();
        jdbc.sql("""
                        INSERT INTO chat_session (id, tenant_id, external_id, version, replied_version, failed_version,
                                                  oldest_unanswered_at, last_message_at, lease_token, lease_expires_at,
                                                  created_at)
                        VALUES (:id, 'test', :ext, :version, :replied, :failed, :oldest, :last, :token, :expires,
                                UTC_TIMESTAMP(6))
                        """)
                .param("id", id)
                .param("ext", "s-" + id)
                .param("version", version)
                .param("replied", repliedVersion)
                .param("failed", failedVersion)
                .param("oldest", DbTime.utc(oldestUnansweredAt))
                .param("last", DbTime.utc(lastMessageAt))
                .param("token", leaseToken)
                .param("expires", DbTime.utc(leaseExpiresAt))
                .update();
        return id;
    }

    /** What ingest-api does for one user message: bump the version on the DB clock; returns its event. */
    MessageAccepted accept(long sessionId) {
        jdbc.sql("""
                        UPDATE chat_session
                           SET version = version + 1,
                               last_message_at = UTC_TIMESTAMP(6),
                               oldest_unanswered_at = COALESCE(oldest_unanswered_at, UTC_TIMESTAMP(6))
                         WHERE id = :id
                        """).param("id", sessionId).update();
        MessageAccepted accepted = jdbc.sql(
                        "SELECT version, last_message_at, oldest_unanswered_at FROM chat_session WHERE id = :id")
                .param("id", sessionId)
                .query((rs, n) -> new MessageAccepted(
                        sessionId,
                        rs.getLong("version"),
                        DbTime.instant(rs, "last_message_at"),
                        DbTime.instant(rs, "oldest_unanswered_at")))
                .single();
        message(sessionId, accepted.version(), accepted.acceptedAt());
        return accepted;
    }

    /** The user message of {@code version}, accepted at {@code acceptedAt}, as ingest-api stores it. */
    void message(long sessionId, long version, Instant acceptedAt) {
        jdbc.sql("""
                        INSERT INTO chat_message (message_uid, session_id, role, text, version, created_at)
                        VALUES (:uid, :session, 'user', 'hi', :version, :at)""")
                .param("uid", java.util.UUID.randomUUID().toString())
                .param("session", sessionId)
                .param("version", version)
                .param("at", DbTime.utc(acceptedAt))
                .update();
    }

    /** {@code count} new sessions with one message each, in one statement; returns their events. */
    List<MessageAccepted> acceptMany(int count) {
        long base = NEXT_ID.getAndAdd(count);
        String rows = IntStream.rangeClosed(1, count)
                .mapToObj(i -> "(" + (base + i) + ", 'test', 's-" + (base + i)
                        + "', 1, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))")
                .collect(Collectors.joining(",\n"));
        jdbc.sql("INSERT INTO chat_session (id, tenant_id, external_id, version, oldest_unanswered_at, "
                        + "last_message_at, created_at) VALUES " + rows)
                .update();
        return jdbc.sql("""
                        SELECT id, version, last_message_at, oldest_unanswered_at
                          FROM chat_session WHERE id > :base AND id <= :last ORDER BY id
                        """)
                .param("base", base)
                .param("last", base + count)
                .query((rs, n) -> new MessageAccepted(
                        rs.getLong("id"),
                        rs.getLong("version"),
                        DbTime.instant(rs, "last_message_at"),
                        DbTime.instant(rs, "oldest_unanswered_at")))
                .list();
    }

    /** What agent-worker does when a reply commits: everything up to the current version is answered. */
    void markAnswered(long sessionId) {
        jdbc.sql("UPDATE chat_session SET replied_version = version, oldest_unanswered_at = NULL WHERE id = :id")
                .param("id", sessionId)
                .update();
    }

    Optional<Timer> timer(long sessionId) {
        return jdbc.sql("""
                        SELECT fire_at, deadline_at, armed_version, armed_by, armed_at
                          FROM debounce_timer WHERE session_id = :id
                        """)
                .param("id", sessionId)
                .query((rs, n) -> new Timer(
                        DbTime.instant(rs, "fire_at"),
                        DbTime.instant(rs, "deadline_at"),
                        rs.getLong("armed_version"),
                        rs.getString("armed_by"),
                        DbTime.instant(rs, "armed_at")))
                .optional();
    }

    long timers(Collection<Long> sessionIds) {
        return jdbc.sql("SELECT COUNT(*) FROM debounce_timer WHERE session_id IN (:ids)")
                .param("ids", sessionIds)
                .query(Long.class)
                .single();
    }
}
