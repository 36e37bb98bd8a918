package dev.settle.agent;

import dev.settle.schema.WebhookSecrets;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.boot.context.properties.bind.Name;

import java.time.Duration;
import java.util.List;

/** Configuration of the agent worker, bound from {@code settle.*} (environment: {@code SETTLE_...}). */
@ConfigurationProperties("settle")
public record AgentSettings(
        @DefaultValue Lease lease,
        @DefaultValue Llm llm,
        @DefaultValue Webhook webhook,
        @DefaultValue Agent agent,
        @DefaultValue Stream stream,
        @DefaultValue Policy policy) {

    /**
     * How streamed output is persisted: chunks written in batches of at most {@code batchSize} or every
     * {@code flushInterval}, whichever comes first.
     *
     * @param batchSize     most streamed chunks persisted in one batch
     * @param flushInterval a batch is persisted at least this often while chunks arrive
     * @param flushDelay    slows every batch write down (fault injection for tests; 0 in production)
     * @param interruptPoll how often the agent looks for a newer message in the sessions it is answering (early
     *                      interrupt under the merge policy)
     */
    public record Stream(
            @DefaultValue("32") int batchSize,
            @DefaultValue("50ms") Duration flushInterval,
            @DefaultValue("0ms") Duration flushDelay,
            @DefaultValue("50ms") Duration interruptPoll) {}

    /** @param defaultPolicy double-texting policy of sessions that set none: merge, enqueue or reject */
    public record Policy(
            @DefaultValue("merge") @Name("default") String defaultPolicy) {
        public Policy {
            if (!dev.settle.schema.Policies.ALL.contains(defaultPolicy)) {
                throw new IllegalStateException("settle.policy.default must be one of " + dev.settle.schema.Policies.ALL
                        + "; got '" + defaultPolicy + "'");
            }
        }
    }

    /** @param ttl lease time-to-live on the DB clock; heartbeats renew it every ttl / 3 */
    public record Lease(@DefaultValue("15s") Duration ttl) {
        public Duration heartbeat() {
            return ttl.dividedBy(3);
        }
    }

    /**
     * @param url         OpenAI-compatible base URL ending in /v1; unset = the offline demo model (required when
     *                    {@code settle.demo.enabled} is false)
     * @param model       model name sent to the server
     * @param key         API key of the model server; unset = none sent
     * @param maxAttempts model calls per turn step before the turn fails; only connection errors, timeouts, 408,
     *                    409, 429 and 5xx are retried
     * @param backoff     first retry delay, doubled per attempt (jittered)
     * @param timeout     one model call must end within it; also the cap on a server's Retry-After
     */
    public record Llm(
            String url,
            @DefaultValue("gpt-4o-mini") String model,
            String key,
            @DefaultValue("3") int maxAttempts,
            @DefaultValue("500ms") Duration backoff,
            @DefaultValue("60s") Duration timeout) {}

    /**
     * Webhook delivery ({@code SETTLE_WEBHOOK_*}); see docs/WEBHOOKS.md.
     *
     * @param url           where replies are POSTed (stamped on each delivery when it is queued); unset = deliveries
     *                      wait in the outbox until it is set
     * @param secret        whsec_ secret(s), space separated during rotation: every one signs every attempt to
     *                      {@code url} (never a tenant's own endpoint). Each is whsec_ + the standard base64 of
     *                      24-64 random bytes; anything else stops the worker at startup
     * @param schedule      delays before each attempt (the first is usually 0s); its length is the number of
     *                      attempts; each delay gets ±20 % jitter
     * @param timeout       the whole attempt (DNS lookup, connect, headers, body) must end within it; else it failed
     * @param allowprivate  allow endpoints in loopback, private, link-local, CGNAT networks
     *                      ({@code SETTLE_WEBHOOK_ALLOWPRIVATE}; named without a dash so that the environment
     *                      variable and the property {@code settle.webhook.allowprivate} are the same name)
     * @param pollInterval  the longest the dispatcher sleeps between looks for due deliveries (less when one is due
     *                      sooner; its own commits and attempts wake it): how late what another instance or an
     *                      operator makes due is found
     * @param maxRetryAfter cap on a receiver's {@code Retry-After} (429/503)
     * @param jitterSeed    seeds the jitter (tests); unset = a random seed
     * @param claimMargin   how long a claim outlives the timeout (the attempt's bookkeeping must fit in it); a
     *                      killed dispatcher's attempt is re-sent once timeout + margin have passed. Tests shorten it
     * @param allowunsigned without {@code secret}, send deliveries to {@code url} unsigned
     *                      ({@code SETTLE_WEBHOOK_ALLOWUNSIGNED}, {@code settle.webhook.allow-unsigned}); false: they
     *                      are not sent (each attempt fails with that reason). Never applies to a tenant's endpoint
     */
    public record Webhook(
            String url,
            String secret,

            @DefaultValue({"0s", "5s", "5m", "30m", "2h", "5h", "10h", "10h"})
            List<Duration> schedule,

            @DefaultValue("15s") Duration timeout,
            @DefaultValue("1s") Duration pollInterval,
            @DefaultValue("false") boolean allowprivate,
            @DefaultValue("1h") Duration maxRetryAfter,
            Long jitterSeed,
            @DefaultValue("15s") Duration claimMargin,
            @DefaultValue("false") boolean allowunsigned) {
        public Webhook {
            if (schedule == null || schedule.isEmpty() || schedule.stream().anyMatch(Duration::isNegative)) {
                throw new IllegalStateException(
                        "SETTLE_WEBHOOK_SCHEDULE (settle.webhook.schedule) must be a comma-separated list of "
                                + "non-negative durations, e.g. 0s,5s,5m; got " + schedule);
            }
            if (timeout.isNegative() || timeout.isZero()) {
                throw new IllegalStateException("SETTLE_WEBHOOK_TIMEOUT (settle.webhook.timeout) must be positive");
            }
            if (maxRetryAfter.isNegative()) {
                throw new IllegalStateException("settle.webhook.max-retry-after must not be negative");
            }
            if (claimMargin.isNegative() || claimMargin.isZero()) {
                throw new IllegalStateException(
                        "SETTLE_WEBHOOK_CLAIMMARGIN (settle.webhook.claim-margin) must be " + "positive");
            }
            if (secret != null && !secret.isBlank()) {
                String[] secrets = secret.trim().split("\\s+");
                for (int i = 0; i < secrets.length; i++) {
                    String problem = WebhookSecrets.problem(secrets[i]);
                    if (problem != null) {
                        throw new IllegalStateException("SETTLE_WEBHOOK_SECRET (settle.webhook.secret): secret #"
                                + (i + 1) + " " + problem + "; a secret is whsec_ followed by the standard base64 of "
                                + WebhookSecrets.MIN_BYTES + " to " + WebhookSecrets.MAX_BYTES + " random bytes, e.g. "
                                + "whsec_$(openssl rand -base64 32)");
                    }
                }
            }
            schedule = List.copyOf(schedule);
        }

        public boolean hasUrl() {
            return url != null && !url.isBlank();
        }
    }

    /**
     * @param maxInFlight  turns one worker runs at once; further SessionReady events wait
     * @param historyLimit committed messages before the unanswered span that the model sees (all unanswered ones are)
     * @param orphanScan   take over sessions whose holder's lease expired, without waiting for an event
     * @param maxRounds   model↔tool rounds per turn; the last round is offered no tools, so it answers in words
     * @param toolTimeout  a tool execution stuck longer than this and owned by no live lease is FAILED by the
     *                     reaper; a turn waits at most this long for an earlier attempt at the same call still in its
     *                     transaction. Unset = 2 × the lease TTL
     * @param systemPrompt the system prompt of every turn; unset = the demo's bookkeeping prompt while
     *                     {@code settle.demo.enabled}, else a neutral assistant prompt
     */
    public record Agent(
            @DefaultValue("4096") int maxInFlight,
            @DefaultValue("50") int historyLimit,
            @DefaultValue("true") boolean orphanScan,
            @DefaultValue("5") int maxRounds,
            Duration toolTimeout,
            String systemPrompt) {}
}
