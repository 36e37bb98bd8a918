package dev.settle.agent.webhook;

import com.standardwebhooks.Webhook;

import java.net.URI;
import java.net.UnknownHostException;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.net.http.HttpTimeoutException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CancellationException;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

/**
 * One signed POST per attempt, per the Standard Webhooks spec: {@code webhook-id} (stable per reply),
 * {@code webhook-timestamp} (per attempt) and {@code webhook-signature} made by the reference library with
 * every secret of the endpoint's owner (space-separated during rotation, so a receiver that knows any one of them
 * verifies): a tenant's own endpoint with that tenant's secrets only, the deployment's with SETTLE_WEBHOOK_SECRET.
 *
 * <ol>
 *   <li>One deadline (the timeout) for the whole attempt: DNS lookup, connect, headers and body. An endpoint that
 *       answers late has not answered, and a hanging resolver cannot hold the attempt past its claim.</li>
 *   <li>The SSRF guard ({@link EndpointGuard}) resolves and checks the host; refused → nothing is sent.</li>
 *   <li>HTTP/1.1, redirects never followed (a 3xx is a failed attempt).</li>
 *   <li>Connections are pooled per host and port by the JDK client and every request waits on its own virtual
 *       thread, so a hanging endpoint holds only its own attempts.</li>
 * </ol>
 */
public final class WebhookSender implements AutoCloseable {
    /**
     * What happened: {@code status} null when no answer came ({@code error} says why; {@code sent} false when
     * the guard refused and nothing left this process); the headers that steer the retry.
     */
    public record Result(Integer status, String error, long latencyMicros, boolean sent, String retryAfter,
                         String date, String deliveryDirective, String location) {
        static Result failed(String error, long latencyMicros, boolean sent) {
            return new Result(null, error, latencyMicros, sent, null, null, null, null);
        }

        public boolean ok() {
            return status != null && status >= 200 && status < 300;
        }

        public boolean interrupted() {
            return status == null && INTERRUPTED.equals(error);
        }
    }

    static final String INTERRUPTED = "interrupted: the dispatcher stopped mid-attempt";

    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final HttpClient http;
    private final List<Webhook> signers;
    /**
     * Signers of tenants' secrets, by their stored string: each claim reads the string afresh, so a rotation (a new
     * string) signs the next attempt.
     */
    private final Map<String, List<Webhook>> tenantSigners = new ConcurrentHashMap<>();
    private final EndpointGuard guard;
    private final Duration timeout;

    /**
     * @param secrets the deployment's whsec_ secrets, separated by whitespace; null or blank: requests to its
     *                endpoint go unsigned (the dispatcher sends none unless settle.webhook.allow-unsigned)
     */
    public WebhookSender(String secrets, Duration timeout, EndpointGuard guard) {
        this.timeout = timeout;
        this.guard = guard;
        this.http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .followRedirects(HttpClient.Redirect.NEVER)
                .connectTimeout(timeout)
                .executor(executor)
                .build();
        try {
            this.signers = signers(secrets);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("SETTLE_WEBHOOK_SECRET (settle.webhook.secret): " + e.getMessage(), e);
        }
    }

    private static List<Webhook> signers(String secrets) {
        List<Webhook> signers = new ArrayList<>();
        if (secrets != null && !secrets.isBlank()) {
            int n = 0;
            for (String secret : secrets.trim().split("\\s+")) {
                n++;
                try {
                    signers.add(new Webhook(secret));
                } catch (RuntimeException e) {
                    throw new IllegalArgumentException("secret #" + n + " is not a valid whsec_<base64> secret", e);
                }
            }
        }
        return List.copyOf(signers);
    }

    /** To the deployment's endpoint, signed with the deployment's secrets (unsigned when it has none). */
    public Result send(String url, String webhookId, long timestamp, String payload) {
        return send(url, webhookId, timestamp, payload, null, null);
    }

    /** Whether the deployment's endpoint gets signed requests (SETTLE_WEBHOOK_SECRET is set). */
    public boolean signsForDeployment() {
        return !signers.isEmpty();
    }

    /**
     * @param timestamp the attempt's webhook-timestamp, epoch seconds (the database clock at the claim)
     * @param tenant    the tenant whose own endpoint {@code url} is: signed with {@code secrets} only, never with
     *                  the deployment's, never unsigned (no secrets → not sent); null = the deployment's endpoint
     * @param secrets   that tenant's whsec_ secrets, space separated
     */
    public Result send(String url, String webhookId, long timestamp, String payload, String tenant, String secrets) {
        long started = System.nanoTime();
        List<Webhook> signers;
        try {
            if (tenant == null) {
                signers = this.signers;
            } else if (secrets == null || secrets.isBlank()) {
                return Result.failed("tenant " + tenant + " has no webhook signing secret; set its webhookSecrets "
                        + "(admin API); not sent", micros(started), false);
            } else {
                signers = tenantSigners.computeIfAbsent(secrets, WebhookSender::signers);
            }
        } catch (IllegalArgumentException e) {
            return Result.failed("tenant " + tenant + "'s webhook secrets are invalid: " + e.getMessage()
                    + "; not sent", micros(started), false);
        }
        long deadline = started + timeout.toNanos();
        URI uri;
        try {
            uri = EndpointGuard.parse(url);
        } catch (EndpointGuard.Refused e) {
            return Result.failed(e.getMessage() + "; not sent", micros(started), false);
        }
        Result refused = checkWithin(uri, deadline, started);
        if (refused != null) {
            return refused;
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            return Result.failed(timedOut(), micros(started), false);
        }
        HttpRequest.Builder request = HttpRequest.newBuilder(uri)
                .timeout(Duration.ofNanos(left))
                .header("Content-Type", "application/json")
                .header("User-Agent", "Settle-Webhooks/1")
                .header("webhook-id", webhookId)
                .header("webhook-timestamp", Long.toString(timestamp))
                .POST(HttpRequest.BodyPublishers.ofString(payload));
        if (!signers.isEmpty()) {
            List<String> signatures = new ArrayList<>();
            for (Webhook signer : signers) {
                try {
                    signatures.add(signer.sign(webhookId, timestamp, payload));
                } catch (Exception e) {
                    return Result.failed("signing failed: " + e, micros(started), false);
                }
            }
            request.header("webhook-signature", String.join(" ", signatures));
        }
        CompletableFuture<HttpResponse<Void>> exchange =
                http.sendAsync(request.build(), HttpResponse.BodyHandlers.discarding());
        try {
            HttpResponse<Void> r = exchange.get(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
            var h = r.headers();
            return new Result(r.statusCode(), null, micros(started), true, h.firstValue("retry-after").orElse(null),
                    h.firstValue("date").orElse(null), h.firstValue("webhook-delivery").orElse(null),
                    h.firstValue("location").orElse(null));
        } catch (TimeoutException e) {
            exchange.cancel(true);
            return Result.failed(timedOut(), micros(started), true);
        } catch (InterruptedException e) {
            exchange.cancel(true);
            Thread.currentThread().interrupt();
            return Result.failed(INTERRUPTED, micros(started), true);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            if (cause instanceof HttpTimeoutException) {
                return Result.failed(timedOut(), micros(started), true);
            }
            return Result.failed("connection failed: " + cause, micros(started), true);
        } catch (CancellationException e) {
            return Result.failed(INTERRUPTED, micros(started), true);
        }
    }

    /**
     * The SSRF check, its DNS lookup included, under the attempt's deadline: a resolver that hangs must not hold
     * the attempt (and its claim) past the timeout. The lookup runs on its own virtual thread; when the deadline
     * passes first it is interrupted and abandoned (a blocked system lookup ends on its own).
     *
     * @return null when the URL may be called; otherwise the failed attempt (nothing sent)
     */
    private Result checkWithin(URI uri, long deadline, long started) {
        Future<?> lookup;
        try {
            lookup = executor.submit(() -> {
                guard.check(uri);
                return null;
            });
        } catch (RejectedExecutionException e) { // closed: the worker is stopping
            return Result.failed(INTERRUPTED, micros(started), false);
        }
        try {
            lookup.get(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
            return null;
        } catch (TimeoutException e) {
            lookup.cancel(true);
            return Result.failed("timeout: resolving " + uri.getHost() + " took longer than the " + timeout.toMillis()
                    + " ms deadline; not sent", micros(started), false);
        } catch (InterruptedException e) {
            lookup.cancel(true);
            Thread.currentThread().interrupt();
            return Result.failed(INTERRUPTED, micros(started), false);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            if (cause instanceof EndpointGuard.Refused) {
                return Result.failed(cause.getMessage() + "; not sent", micros(started), false);
            }
            if (cause instanceof UnknownHostException) {
                return Result.failed("DNS: cannot resolve " + cause.getMessage() + "; not sent", micros(started),
                        false);
            }
            return Result.failed("DNS: resolving " + uri.getHost() + " failed: " + cause + "; not sent",
                    micros(started), false);
        }
    }

    private String timedOut() {
        return "timeout: no complete answer within " + timeout.toMillis() + " ms";
    }

    private static long micros(long startedNanos) {
        return (System.nanoTime() - startedNanos) / 1000;
    }

    @Override
    public void close() {
        http.shutdownNow();
        executor.shutdownNow();
    }
}
