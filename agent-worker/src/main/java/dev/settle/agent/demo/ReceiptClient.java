package dev.settle.agent.demo;

import dev.settle.agent.webhook.EndpointGuard;
import dev.settle.agent.webhook.PinnedHttp;
import org.apache.hc.client5.http.HttpHostConnectException;
import org.apache.hc.client5.http.classic.methods.HttpPost;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.ssl.DefaultClientTlsStrategy;
import org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.io.entity.EntityUtils;
import org.apache.hc.core5.http.io.entity.StringEntity;
import org.apache.hc.core5.io.CloseMode;
import org.apache.hc.core5.util.Timeout;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.List;

/**
 * POSTs JSON to one configured URL with an {@code Idempotency-Key} header, under the webhook sender's outbound
 * rules: the URL must be absolute http(s); the SSRF guard ({@link EndpointGuard}) resolves the host and checks
 * every address (private networks only when allowed), and the client connects only to a checked address (it never
 * resolves a name itself, so no DNS rebinding); no proxy, redirects never followed (a 3xx is a failed call), no
 * automatic retries, no cookies; connect and response each bounded by the timeout.
 */
public final class ReceiptClient implements AutoCloseable {
    private final URI uri;
    private final EndpointGuard guard;
    private final Timeout timeout;
    private final CloseableHttpClient http;

    public ReceiptClient(String url, Duration timeout, EndpointGuard guard) {
        try {
            this.uri = EndpointGuard.parse(url);
        } catch (EndpointGuard.Refused e) {
            throw new IllegalStateException("SETTLE_DEMO_RECEIPTURL (settle.demo.receipt-url): " + e.getMessage(), e);
        }
        this.guard = guard;
        this.timeout = Timeout.of(timeout);
        this.http = PinnedHttp.client(timeout, DefaultClientTlsStrategy.createSystemDefault());
    }

    /**
     * @return the HTTP status of the answer (its body is read and dropped)
     * @throws IllegalStateException when the guard refuses the URL: nothing was sent
     * @throws UncheckedIOException when no answer came (it may or may not have been applied)
     */
    public int post(String json, String idempotencyKey) {
        List<InetAddress> addresses;
        try {
            addresses = guard.check(uri);
        } catch (EndpointGuard.Refused e) {
            throw new IllegalStateException(e.getMessage()
                            .replace(
                                    "SETTLE_WEBHOOK_ALLOWPRIVATE=true (settle.webhook.allowprivate)",
                                    "SETTLE_DEMO_RECEIPTALLOWPRIVATE=true (settle.demo.receipt-allowprivate)")
                    + "; not sent");
        } catch (UnknownHostException e) {
            throw new UncheckedIOException("cannot resolve " + uri.getHost() + "; not sent", e);
        }
        HttpPost request = new HttpPost(uri);
        request.setConfig(RequestConfig.custom()
                .setConnectionRequestTimeout(timeout)
                .setResponseTimeout(timeout)
                .build());
        request.setHeader("User-Agent", "Settle-Tools/1");
        request.setHeader("Idempotency-Key", idempotencyKey);
        request.setEntity(new StringEntity(json, ContentType.APPLICATION_JSON));
        try {
            return PinnedHttp.execute(http, uri, addresses, request, (ClassicHttpResponse r) -> {
                EntityUtils.consume(r.getEntity());
                return r.getCode();
            });
        } catch (HttpHostConnectException e) { // nothing was sent
            throw new UncheckedIOException("cannot connect to the receipt service: " + e, e);
        } catch (IOException e) {
            throw new UncheckedIOException("the receipt service did not answer: " + e, e);
        }
    }

    @Override
    public void close() {
        http.close(CloseMode.GRACEFUL);
    }
}
