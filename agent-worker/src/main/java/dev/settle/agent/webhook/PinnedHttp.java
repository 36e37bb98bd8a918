package dev.settle.agent.webhook;

import org.apache.hc.client5.http.DnsResolver;
import org.apache.hc.client5.http.HttpHostConnectException;
import org.apache.hc.client5.http.config.ConnectionConfig;
import org.apache.hc.client5.http.impl.DefaultSchemePortResolver;
import org.apache.hc.client5.http.impl.classic.CloseableHttpClient;
import org.apache.hc.client5.http.impl.classic.HttpClients;
import org.apache.hc.client5.http.impl.io.PoolingHttpClientConnectionManagerBuilder;
import org.apache.hc.client5.http.impl.routing.DefaultRoutePlanner;
import org.apache.hc.client5.http.protocol.HttpClientContext;
import org.apache.hc.client5.http.ssl.TlsSocketStrategy;
import org.apache.hc.core5.http.ClassicHttpRequest;
import org.apache.hc.core5.http.HttpHost;
import org.apache.hc.core5.http.io.HttpClientResponseHandler;
import org.apache.hc.core5.util.TimeValue;
import org.apache.hc.core5.util.Timeout;

import java.io.IOException;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.time.Duration;
import java.util.List;

/**
 * The one way Settle calls a URL that someone else chose (webhooks, outbound demo tools), after
 * {@link EndpointGuard} resolved its host once and checked every address:
 *
 * <ol>
 *   <li>The client never resolves a name itself (its resolver refuses every lookup) and never uses a proxy (a proxy
 *       would resolve the name again), so it connects only to a checked address: no DNS-rebinding window.</li>
 *   <li>Each request targets a checked address while the Host header, TLS SNI and certificate check use the URL's
 *       host name; the next checked address is tried only when the previous one refused the connection (nothing
 *       was sent to it).</li>
 *   <li>Connections are pooled per scheme, host name, port and address, so one is reused only for the address it
 *       was opened to. No redirects, automatic retries, cookies or compression.</li>
 * </ol>
 */
public final class PinnedHttp {
    private static final DnsResolver NO_LOOKUPS = new DnsResolver() {
        @Override
        public InetAddress[] resolve(String host) throws UnknownHostException {
            throw new UnknownHostException(host + ": this client connects only to addresses checked by the SSRF "
                    + "guard and never resolves a host name itself");
        }

        @Override
        public String resolveCanonicalHostname(String host) throws UnknownHostException {
            return resolve(host)[0].getHostName();
        }
    };

    private PinnedHttp() {}

    /** @param timeout connect and socket timeout of every connection */
    public static CloseableHttpClient client(Duration timeout, TlsSocketStrategy tls) {
        return HttpClients.custom()
                .setConnectionManager(PoolingHttpClientConnectionManagerBuilder.create()
                        .setDnsResolver(NO_LOOKUPS)
                        .setTlsSocketStrategy(tls)
                        .setMaxConnTotal(Integer.MAX_VALUE)
                        .setMaxConnPerRoute(Integer.MAX_VALUE)
                        .setDefaultConnectionConfig(ConnectionConfig.custom()
                                .setConnectTimeout(Timeout.of(timeout))
                                .setSocketTimeout(Timeout.of(timeout))
                                .setValidateAfterInactivity(TimeValue.ofSeconds(1))
                                .build())
                        .build())
                // direct connections only: no proxy from system properties, the environment or a ProxySelector
                .setRoutePlanner(new DefaultRoutePlanner(DefaultSchemePortResolver.INSTANCE))
                .disableRedirectHandling()
                .disableAutomaticRetries()
                .disableCookieManagement()
                .disableAuthCaching()
                .disableContentCompression()
                .evictIdleConnections(TimeValue.ofMinutes(1))
                .build();
    }

    /**
     * Sends the request to the first checked address that accepts the connection.
     *
     * @throws HttpHostConnectException when every address refused the connection: nothing was sent
     */
    public static <T> T execute(
            CloseableHttpClient http,
            URI uri,
            List<InetAddress> checked,
            ClassicHttpRequest request,
            HttpClientResponseHandler<T> handler)
            throws IOException {
        String hostName = hostName(uri);
        HttpHostConnectException refused = null;
        for (InetAddress address : checked) {
            try {
                return http.execute(
                        new HttpHost(uri.getScheme(), address, hostName, uri.getPort()),
                        request,
                        HttpClientContext.create(),
                        handler);
            } catch (HttpHostConnectException e) { // nothing was sent to this address
                refused = e;
            }
        }
        if (refused == null) {
            throw new UnknownHostException(uri.getHost() + ": no checked address");
        }
        throw refused;
    }

    /** The URL's host name, an IPv6 literal without its brackets. */
    static String hostName(URI uri) {
        String host = uri.getHost();
        return host.startsWith("[") && host.endsWith("]") ? host.substring(1, host.length() - 1) : host;
    }
}
