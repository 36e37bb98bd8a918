package dev.settle.ingest;

import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.boot.context.properties.bind.Name;

import java.time.Duration;
import java.util.Set;

/**
 * @param apiKey         the bearer key clients must present ({@code SETTLE_API_KEY}); required
 * @param maxBodyBytes   larger request bodies are refused with 413
 * @param maxTextChars   longer message texts are refused with 413
 * @param adminKey       bearer key of the admin API ({@code SETTLE_ADMIN_KEY}); unset = the admin API is closed
 * @param limits         per-session and per-tenant limits ({@code SETTLE_LIMITS_*})
 * @param auth           failed-authentication limits per client address ({@code SETTLE_AUTH_*})
 * @param idempotency    how long Idempotency-Keys are honoured ({@code SETTLE_IDEMPOTENCY_*})
 * @param ingest         how accepted messages are committed ({@code SETTLE_INGEST_*})
 */
@ConfigurationProperties("settle")
public record IngestSettings(
        String apiKey,
        @DefaultValue("65536") int maxBodyBytes,
        @DefaultValue("16000") int maxTextChars,
        @DefaultValue Policy policy,
        @DefaultValue Events events,
        String adminKey,
        @DefaultValue Limits limits,
        @DefaultValue Auth auth,
        @DefaultValue Idempotency idempotency,
        @DefaultValue Ingest ingest) {
    public static final Set<String> POLICIES = dev.settle.schema.Policies.ALL;

    public IngestSettings {
        if (apiKey == null || apiKey.isBlank()) {
            throw new IllegalStateException("SETTLE_API_KEY (settle.api-key) must be set");
        }
    }

    /** @param defaultPolicy double-texting policy of sessions that set none ({@code SETTLE_POLICY_DEFAULT}) */
    public record Policy(
            @DefaultValue("merge") @Name("default") String defaultPolicy) {
        public Policy {
            if (!POLICIES.contains(defaultPolicy)) {
                throw new IllegalStateException("settle.policy.default must be one of " + POLICIES);
            }
        }
    }

    /**
     * @param maxUnanswered        a session with this many unanswered messages refuses the next one (429)
     * @param unansweredRetryAfter the Retry-After of that refusal
     * @param rate                 requests per second per tenant and ingest instance; 0 = unlimited
     * @param burst                requests a tenant may save up
     */
    public record Limits(
            @DefaultValue("100") int maxUnanswered,
            @DefaultValue("5s") Duration unansweredRetryAfter,
            @DefaultValue("100") double rate,
            @DefaultValue("200") int burst) {
        public Limits {
            if (maxUnanswered < 1 || rate < 0 || burst < 1) {
                throw new IllegalStateException(
                        "settle.limits: max-unanswered and burst must be at least 1, rate at least 0");
            }
        }
    }

    /**
     * @param retention     an Idempotency-Key is honoured this long after the message it created; then forgotten
     * @param purgeInterval how often each ingest instance forgets the keys past the retention
     */
    public record Idempotency(
            @DefaultValue("24h") Duration retention,
            @DefaultValue("10m") Duration purgeInterval) {
        public Idempotency {
            if (retention.compareTo(Duration.ofMinutes(1)) < 0
                    || purgeInterval.isNegative()
                    || purgeInterval.isZero()) {
                throw new IllegalStateException(
                        "settle.idempotency: retention must be at least 1m, purge-interval positive");
            }
        }
    }

    /**
     * @param groupCommit    messages that arrive while others are being written are committed together, in one
     *                       transaction ({@code SETTLE_INGEST_GROUPCOMMIT}, on by default); each request still answers
     *                       after the commit that holds its message
     * @param groupCommitMax most messages in one such transaction ({@code SETTLE_INGEST_GROUPCOMMITMAX})
     * @param groupCommitLockWait the longest such a transaction waits to create its new sessions (one created meanwhile
     *                       by another writer) before its messages go alone; it never waits for an existing session's
     *                       row ({@code SETTLE_INGEST_GROUPCOMMITLOCKWAIT})
     */
    public record Ingest(
            @DefaultValue("true") boolean groupCommit,
            @DefaultValue("64") int groupCommitMax,
            @DefaultValue("500ms") Duration groupCommitLockWait) {
        public Ingest {
            if (groupCommitMax < 1 || groupCommitMax > 1000) {
                throw new IllegalStateException("settle.ingest.group-commit-max must be between 1 and 1000");
            }
            if (groupCommitLockWait.toMillis() < 1) {
                throw new IllegalStateException("settle.ingest.group-commit-lock-wait must be at least 1ms");
            }
        }
    }

    /**
     * @param failureRate  failed authentications per second a client address gets back; 0 = unlimited
     * @param failureBurst failed authentications a client address may make in a row before it must wait (429)
     * @param keyCache     how long an issued key found live is trusted without a lookup; a key revoked on another
     *                     instance is refused here at most this much later (at once on the instance that revoked
     *                     it); 0 = a lookup for every request
     */
    public record Auth(
            @DefaultValue("1") double failureRate,
            @DefaultValue("20") int failureBurst,
            @DefaultValue("100ms") Duration keyCache) {
        public Auth {
            if (failureRate < 0 || failureBurst < 1 || keyCache.isNegative()) {
                throw new IllegalStateException(
                        "settle.auth: failure-rate and key-cache must be at least 0, failure-burst at least 1");
            }
        }
    }

    /**
     * @param pollInterval   how often this instance's one event poller looks for new events of the sessions its open
     *                       streams watch (none while no stream is open)
     * @param maxDuration    an event stream is closed after this; the client reconnects with Last-Event-ID
     * @param keepAlive      an idle stream sends a comment this often, so that a dead connection is noticed
     * @param maxPerTenant   open event streams per tenant in this ingest instance; one more is refused (429)
     * @param maxPerInstance open event streams of all tenants in this ingest instance; one more is refused (429)
     */
    public record Events(
            @DefaultValue("50ms") Duration pollInterval,
            @DefaultValue("5m") Duration maxDuration,
            @DefaultValue("15s") Duration keepAlive,
            @DefaultValue("100") int maxPerTenant,
            @DefaultValue("2000") int maxPerInstance) {
        public Events {
            if (maxPerTenant < 1 || maxPerInstance < 1 || pollInterval.isNegative() || pollInterval.isZero()) {
                throw new IllegalStateException(
                        "settle.events: max-per-tenant and max-per-instance must be at least 1, poll-interval positive");
            }
        }
    }
}
