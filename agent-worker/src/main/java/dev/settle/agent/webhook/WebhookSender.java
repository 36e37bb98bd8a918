package dev.settle.agent.webhook;

import com.standardwebhooks.Webhook;
import org.apache.hc.client5.http.ConnectTimeoutException;
import org.apache.hc.client5.http.classic.methods.HttpPost;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.ssl.DefaultClientTlsStrategy;
import org.apache.hc.client5.http.ssl.TlsSocketStrategy;
import org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.Header;
import org.apache.hc.core5.http.io.entity.ByteArrayEntity;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.io.CloseMode;
import org.apache.hc.core5.util.Timeout;

import java.io.IOException;
import java.net.InetAddress;
import java.net.SocketTimeoutException;
import java.net.URI;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CancellationException;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static java.nio.charset.StandardCharsets.UTF_8;

/**
 * One signed POST per attempt, per the Standard Webhooks spec: {@code webhook-id} (stable per reply),
 * {@code webhook-timestamp} (per attempt) and {@code webhook-signature} made by the reference library with
 * every secret of the endpoint's owner (space-separated during rotation, so a receiver that knows any one of them
 * verifies): a tenant's own endpoint with that tenant's secrets only, the deployment's with SETTLE_WEBHOOK_SECRET.
 *
 * <ol>
 *   <li>One deadline (the timeout) for the whole attempt: DNS lookup, connect, headers and body. An endpoint that
 *       answers late has not answered, and a hanging resolver cannot hold the attempt past its claim.</li>
 *   <li>The SSRF guard ({@link EndpointGuard}) resolves the host once and checks every address; refused →
 *       nothing is sent. The connection goes to a checked address (the next one only when the previous one
 *       refused the connection) while the Host header, TLS SNI and certificate check use the URL's host name.
 *       The HTTP client itself never resolves a name (its resolver refuses every lookup) and never uses a proxy
 *       (a proxy would resolve the name again), so there is no DNS-rebinding window.</li>
 *   <li>HTTP/1.1, one request per attempt: redirects never followed (a 3xx is a failed attempt), no automatic
 *       retries, no cookies, no compression.</li>
 *   <li>Connections are pooled per scheme, host name, port <em>and checked address</em>, so a pooled connection is
 *       reused only for the address it was opened to; every request waits on its own virtual thread, so a hanging
 *       endpoint holds only its own attempts.</li>
 * </ol>
 */
final class WebhookSender implements AutoCloseable {
    /**
     * What happened: {@code status} null when no answer came ({@code error} says why; {@code sent} false when
     * the guard refused and nothing left this process); the headers that steer the retry.
     */
    public record Result(
            Integer status,
            String error,
            long latencyMicros,
            boolean sent,
            String retryAfter,
            String date,
            String deliveryDirective,
            String location) {
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

    private static final ContentType JSON = ContentType.create("application/json");

    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();
    private final CloseableHttpClient http;
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
        this(secrets, timeout, guard, DefaultClientTlsStrategy.createSystemDefault());
    }

    /** @param tls TLS for https endpoints (the JVM's trust store and settings in production) */
    WebhookSender(String secrets, Duration timeout, EndpointGuard guard, TlsSocketStrategy tls) {
        this.timeout = timeout;
        this.guard = guard;
        try {
            this.signers = signers(secrets);
        } catch (IllegalArgumentException e) {
            throw new IllegalStateException("SETTLE_WEBHOOK_SECRET (settle.webhook.secret): " + e.getMessage(), e);
        }
        this.http = PinnedHttp.client(timeout, tls);
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
                return Result.failed(
                        "tenant " + tenant + " has no webhook signing secret; set its webhookSecrets "
                                + "(admin API); not sent",
                        micros(started),
                        false);
            } else {
                signers = tenantSigners.computeIfAbsent(secrets, WebhookSender::signers);
            }
        } catch (IllegalArgumentException e) {
            return Result.failed(
                    "tenant " + tenant + "'s webhook secrets are invalid: " + e.getMessage() + "; not sent",
                    micros(started),
                    false);
        }
        long deadline = started + timeout.toNanos();
        URI uri;
        try {
            uri = EndpointGuard.parse(url);
        } catch (EndpointGuard.Refused e) {
            return Result.failed(e.getMessage() + "; not sent", micros(started), false);
        }
        Checked checked = checkWithin(uri, deadline, started);
        if (checked.refused() != null) {
            return checked.refused();
        }
        long left = deadline - System.nanoTime();
        if (left <= 0) {
            return Result.failed(timedOut(), micros(started), false);
        }
        HttpPost request = new HttpPost(uri);
        request.setConfig(RequestConfig.custom()
                .setConnectionRequestTimeout(Timeout.of(left, TimeUnit.NANOSECONDS))
                .setResponseTimeout(Timeout.of(left, TimeUnit.NANOSECONDS))
                .build());
        request.setHeader("User-Agent", "Settle-Webhooks/1");
        request.setHeader("webhook-id", webhookId);
        request.setHeader("webhook-timestamp", Long.toString(timestamp));
        request.setEntity(new ByteArrayEntity(payload.getBytes(UTF_8), JSON));
        if (!signers.isEmpty()) {
            List<String> signatures = new ArrayList<>();
            for (Webhook signer : signers) {
                try {
                    signatures.add(signer.sign(webhookId, timestamp, payload));
                } catch (Exception e) {
                    return Result.failed("signing failed: " + e, micros(started), false);
                }
            }
            request.setHeader("webhook-signature", String.join(" ", signatures));
        }
        Future<Result> exchange;
        try {
            exchange = executor.submit(() -> exchange(request, uri, checked.addresses(), started));
        } catch (RejectedExecutionException e) { // closed: the worker is stopping
            return Result.failed(INTERRUPTED, micros(started), false);
        }
        try {
            return exchange.get(deadline - System.nanoTime(), TimeUnit.NANOSECONDS);
        } catch (TimeoutException e) {
            abort(request, exchange);
            return Result.failed(timedOut(), micros(started), true);
        } catch (InterruptedException e) {
            abort(request, exchange);
            Thread.currentThread().interrupt();
            return Result.failed(INTERRUPTED, micros(started), true);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            if (cause instanceof SocketTimeoutException || cause instanceof ConnectTimeoutException) {
                return Result.failed(timedOut(), micros(started), true);
            }
            return Result.failed("connection failed: " + cause, micros(started), true);
        } catch (CancellationException e) {
            return Result.failed(INTERRUPTED, micros(started), true);
        }
    }

    /**
     * POSTs to the first checked address that accepts the connection: the target names that address, so the
     * client connects exactly there, and the URL's host name for the Host header, SNI and the certificate check.
     * The body of the answer is read and dropped (the connection stays reusable).
     */
    private Result exchange(HttpPost request, URI uri, List<InetAddress> addresses, long started) throws IOException {
        return PinnedHttp.execute(http, uri, addresses, request, (ClassicHttpResponse r) -> {
            EntityUtils.consume(r.getEntity());
            return new Result(
                    r.getCode(),
                    null,
                    micros(started),
                    true,
                    header(r, "retry-after"),
                    header(r, "date"),
                    header(r, "webhook-delivery"),
                    header(r, "location"));
        });
    }

    private static String header(ClassicHttpResponse response, String name) {
        Header h = response.getFirstHeader(name);
        return h == null ? null : h.getValue();
    }

    private static void abort(HttpPost request, Future<?> exchange) {
        request.cancel(); // closes the connection, whatever the exchange is blocked on
        exchange.cancel(true);
    }

    /** The guard's verdict: the addresses that may be connected to, or the failed attempt. */
    private record Checked(List<InetAddress> addresses, Result refused) {
        static Checked failed(Result refused) {
            return new Checked(List.of(), refused);
        }
    }

    /**
     * The SSRF check, its DNS lookup included, under the attempt's deadline: a resolver that hangs must not hold
     * the attempt (and its claim) past the timeout. The lookup runs on its own virtual thread; when the deadline
     * passes first it is interrupted and abandoned (a blocked system lookup ends on its own).
     *
     * @return the checked addresses, or the failed attempt (nothing sent)
     */
    private Checked checkWithin(URI uri, long deadline, long started) {
        Future<List<InetAddress>> lookup;
        try {
            lookup = executor.submit(() -> guard.check(uri));
        } catch (RejectedExecutionException e) { // closed: the worker is stopping
            return Checked.failed(Result.failed(INTERRUPTED, micros(started), false));
        }
        try {
            return new Checked(lookup.get(deadline - System.nanoTime(), TimeUnit.NANOSECONDS), null);
        } catch (TimeoutException e) {
            lookup.cancel(true);
            return Checked.failed(Result.failed(
                    "timeout: resolving " + uri.getHost() + " took longer than the " + timeout.toMillis()
                            + " ms deadline; not sent",
                    micros(started),
                    false));
        } catch (InterruptedException e) {
            lookup.cancel(true);
            Thread.currentThread().interrupt();
            return Checked.failed(Result.failed(INTERRUPTED, micros(started), false));
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            if (cause instanceof EndpointGuard.Refused) {
                return Checked.failed(Result.failed(cause.getMessage() + "; not sent", micros(started), false));
            }
            if (cause instanceof UnknownHostException) {
                return Checked.failed(Result.failed(
                        "DNS: cannot resolve " + cause.getMessage() + "; not sent", micros(started), false));
            }
            return Checked.failed(Result.failed(
                    "DNS: resolving " + uri.getHost() + " failed: " + cause + "; not sent", micros(started), false));
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
        http.close(CloseMode.IMMEDIATE);
        executor.shutdownNow();
    }
}
