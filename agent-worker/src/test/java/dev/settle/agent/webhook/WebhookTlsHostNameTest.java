package dev.settle.agent.webhook;

import com.sun.net.httpserver.HttpsConfigurator;
import com.sun.net.httpserver.HttpsParameters;
import com.sun.net.httpserver.HttpsServer;
import org.apache.hc.client5.http.ssl.DefaultClientTlsStrategy;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import javax.net.ssl.KeyManagerFactory;
import javax.net.ssl.SNIHostName;
import javax.net.ssl.SNIMatcher;
import javax.net.ssl.SNIServerName;
import javax.net.ssl.SSLContext;
import javax.net.ssl.SSLParameters;
import javax.net.ssl.StandardConstants;
import javax.net.ssl.TrustManagerFactory;
import java.io.InputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.UnknownHostException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * An https endpoint is connected to at the checked address, while TLS is done for the URL's host name: SNI
 * names it and the certificate must be valid for it. The server listens on 127.0.0.2 (public for this test's
 * guard) with a certificate for hook.example only.
 */
class WebhookTlsHostNameTest {
    static final char[] PASSWORD = "changeit".toCharArray();

    @Test
    void sni_host_header_and_certificate_check_use_the_url_host_name(@TempDir Path dir) throws Exception {
        Path keystore = dir.resolve("hook.p12");
        Process keytool = new ProcessBuilder(
                        Path.of(System.getProperty("java.home"), "bin", "keytool")
                                .toString(),
                        "-genkeypair",
                        "-alias",
                        "hook",
                        "-keyalg",
                        "EC",
                        "-groupname",
                        "secp256r1",
                        "-dname",
                        "CN=hook.example",
                        "-ext",
                        "SAN=dns:hook.example",
                        "-validity",
                        "2",
                        "-storetype",
                        "PKCS12",
                        "-keystore",
                        keystore.toString(),
                        "-storepass",
                        "changeit",
                        "-keypass",
                        "changeit")
                .redirectErrorStream(true)
                .start();
        String keytoolOutput = new String(keytool.getInputStream().readAllBytes());
        assertTrue(keytool.waitFor(60, TimeUnit.SECONDS) && keytool.exitValue() == 0, keytoolOutput);
        KeyStore ks = KeyStore.getInstance("PKCS12");
        try (InputStream in = Files.newInputStream(keystore)) {
            ks.load(in, PASSWORD);
        }
        KeyManagerFactory kmf = KeyManagerFactory.getInstance(KeyManagerFactory.getDefaultAlgorithm());
        kmf.init(ks, PASSWORD);
        SSLContext serverTls = SSLContext.getInstance("TLS");
        serverTls.init(kmf.getKeyManagers(), null, null);
        TrustManagerFactory tmf = TrustManagerFactory.getInstance(TrustManagerFactory.getDefaultAlgorithm());
        tmf.init(ks);
        SSLContext clientTls = SSLContext.getInstance("TLS");
        clientTls.init(null, tmf.getTrustManagers(), null);

        InetAddress publicAddress = InetAddress.getByName("127.0.0.2");
        List<String> sni = new CopyOnWriteArrayList<>();
        List<String> hosts = new CopyOnWriteArrayList<>();
        HttpsServer server = HttpsServer.create(new InetSocketAddress(publicAddress, 0), 0);
        server.setHttpsConfigurator(new HttpsConfigurator(serverTls) {
            @Override
            public void configure(HttpsParameters params) {
                SSLParameters p = serverTls.getDefaultSSLParameters();
                p.setSNIMatchers(List.of(new SNIMatcher(StandardConstants.SNI_HOST_NAME) {
                    @Override
                    public boolean matches(SNIServerName name) {
                        sni.add(((SNIHostName) name).getAsciiName());
                        return true;
                    }
                }));
                params.setSSLParameters(p);
            }
        });
        server.createContext("/", exchange -> {
            hosts.add(exchange.getRequestHeaders().getFirst("Host"));
            exchange.getRequestBody().readAllBytes();
            exchange.sendResponseHeaders(200, -1);
            exchange.close();
        });
        server.start();
        int port = server.getAddress().getPort();
        EndpointGuard guard = new EndpointGuard(
                false,
                host -> {
                    if (host.equals("hook.example") || host.equals("other.example")) {
                        return new InetAddress[] {publicAddress};
                    }
                    throw new UnknownHostException(host);
                },
                a -> a.equals(publicAddress) ? null : EndpointGuard.forbiddenClass(a));
        try (WebhookSender sender = new WebhookSender(
                WebhookNode.SECRET, Duration.ofSeconds(10), guard, new DefaultClientTlsStrategy(clientTls))) {
            WebhookSender.Result ok = assertTimeoutPreemptively(
                    Duration.ofSeconds(30),
                    () -> sender.send("https://hook.example:" + port + "/hooks", "wh_msg_tls_1", 1_700_000_000L, "{}"));
            assertEquals(200, ok.status(), String.valueOf(ok.error()));
            assertEquals(List.of("hook.example"), sni, "SNI names the URL's host, not the address");
            assertEquals(List.of("hook.example:" + port), hosts);

            // same address, another name: the certificate is checked against the URL's name and does not match
            WebhookSender.Result wrongName = assertTimeoutPreemptively(
                    Duration.ofSeconds(30),
                    () -> sender.send(
                            "https://other.example:" + port + "/hooks", "wh_msg_tls_2", 1_700_000_000L, "{}"));
            assertNull(wrongName.status());
            assertTrue(
                    wrongName.error().startsWith("connection failed: javax.net.ssl.SSL")
                            && wrongName.error().contains("other.example"),
                    wrongName.error());
            assertEquals(1, hosts.size(), "no request over the unverified connection");
        } finally {
            server.stop(0);
        }
    }
}
