package dev.settle.agent.tools;

import dev.settle.agent.webhook.EndpointGuard;
import org.apache.hc.client5.http.DnsResolver;
import org.apache.hc.client5.http.HttpHostConnectException;
import org.apache.hc.client5.http.classic.methods.HttpPost;
import org.apache.hc.client5.http.config.ConnectionConfig;
import org.apache.hc.client5.http.config.RequestConfig;
import org.apache.hc.client5.http.impl.DefaultSchemePortResolver;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder;
import org.apache.hc.client5.http.impl.routing.DefaultRoutePlanner;
import org.apache.hc.client5.http.protocol.HttpClientContext;
import org.apache.hc.core5.http.ClassicHttpResponse;
import org.apache.hc.core5.http.ContentType;
import org.apache.hc.core5.http.HttpHost;
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
    private static final DnsResolver NO_LOOKUPS = new DnsResolver() {
        @Override
        public InetAddress[] resolve(String host) throws UnknownHostException {
            throw new UnknownHostException(host + ": the receipt client connects only to addresses checked by the "
                    + "SSRF guard and never resolves a host name itself");
        }

        @Override
        public String resolveCanonicalHostname(String host) throws UnknownHostException {
            return resolve(host)[0].getHostName();
        }
    };

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
        this.http = HttpClients.custom()
                .setConnectionManager(PoolingHttpClientConnectionManagerBuilder.create()
                        .setDnsResolver(NO_LOOKUPS)
                        .setDefaultConnectionConfig(ConnectionConfig.custom()
                                .setConnectTimeout(this.timeout)
                                .setSocketTimeout(this.timeout)
                                .build())
                        .build())
                .setRoutePlanner(new DefaultRoutePlanner(DefaultSchemePortResolver.INSTANCE))
                .disableRedirectHandling()
                .disableAutomaticRetries()
                .disableCookieManagement()
                .disableAuthCaching()
                .disableContentCompression()
                .build();
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
            throw new IllegalStateException(e.getMessage().replace("SETTLE_WEBHOOK_ALLOWPRIVATE=true (settle.webhook.allowprivate)",
                    "SETTLE_DEMO_RECEIPTALLOWPRIVATE=true (settle.demo.receipt-allowprivate)") + "; not sent");
        } catch (UnknownHostException e) {
            throw new UncheckedIOException("cannot resolve " + uri.getHost() + "; not sent", e);
        }
        HttpPost request = new HttpPost(uri);
        request.setConfig(RequestConfig.custom().setConnectionRequestTimeout(timeout).setResponseTimeout(timeout).build());
        request.setHeader("User-Agent", "Settle-Tools/1");
        request.setHeader("Idempotency-Key", idempotencyKey);
        request.setEntity(new StringEntity(json, ContentType.APPLICATION_JSON));
        String host = uri.getHost().startsWith("[") ? uri.getHost().substring(1, uri.getHost().length() - 1) : uri.getHost();
        HttpHostConnectException refused = null;
        for (InetAddress address : addresses) {
            try {
                return http.execute(new HttpHost(uri.getScheme(), address, host, uri.getPort()), request,
                        HttpClientContext.create(), (ClassicHttpResponse r) -> {
                            EntityUtils.consume(r.getEntity());
                            return r.getCode();
                        });
            } catch (HttpHostConnectException e) { // nothing was sent to this address
                refused = e;
            } catch (IOException e) {
                throw new UncheckedIOException("the receipt service did not answer: " + e, e);
            }
        }
        throw new UncheckedIOException("cannot connect to the receipt service: " + refused, refused);
    }

    @Override
    public void close() {
        http.close(CloseMode.GRACEFUL);
    }
}
