package dev.settle.agent.webhook;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.params.provider.ValueSource;

import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Map;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The SSRF guard on literal addresses and on a scripted resolver: every forbidden class, refused with its name. */
class WebhookEndpointGuardTest {
    static final EndpointGuard STRICT = EndpointGuard.system(false);

    @ParameterizedTest(name = "{0} is {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                "0.0.0.0          | an unspecified address (0.0.0.0/8)",
                "0.1.2.3          | an unspecified address (0.0.0.0/8)",
                "127.0.0.1        | a loopback address (127.0.0.0/8)",
                "127.255.255.254  | a loopback address (127.0.0.0/8)",
                "10.0.0.1         | a private address (10.0.0.0/8)",
                "10.255.255.255   | a private address (10.0.0.0/8)",
                "172.16.0.1       | a private address (172.16.0.0/12)",
                "172.31.255.255   | a private address (172.16.0.0/12)",
                "192.168.1.1      | a private address (192.168.0.0/16)",
                "169.254.0.1      | a link-local address (169.254.0.0/16)",
                "169.254.169.254  | the link-local cloud metadata address (169.254.169.254)",
                "100.64.0.1       | a carrier-grade NAT address (100.64.0.0/10)",
                "100.127.255.255  | a carrier-grade NAT address (100.64.0.0/10)",
                "192.0.0.192      | an IETF protocol address (192.0.0.0/24)",
                "198.18.0.1       | a benchmarking address (198.18.0.0/15)",
                "224.0.0.1        | a multicast address (224.0.0.0/4)",
                "255.255.255.255  | a reserved or broadcast address (240.0.0.0/4)",
                "::               | an unspecified address (::)",
                "::1              | a loopback address (::1)",
                "fc00::1          | a private (unique local) address (fc00::/7)",
                "fd12:3456::1     | a private (unique local) address (fc00::/7)",
                "fd00:ec2::254    | the unique local cloud metadata address (fd00:ec2::254)",
                "fd00:ec2::253    | a private (unique local) address (fc00::/7)",
                "fe80::1          | a link-local address (fe80::/10)",
                "febf::1          | a link-local address (fe80::/10)",
                "fec0::1          | a private (site-local) address (fec0::/10)",
                "ff02::1          | a multicast address (ff00::/8)",
                "::127.0.0.1      | the IPv4-compatible form of 127.0.0.1, a loopback address (127.0.0.0/8)",
                "64:ff9b::a9fe:a9fe | the NAT64 (64:ff9b::/96) form of 169.254.169.254, the link-local cloud metadata address (169.254.169.254)",
                "2002:c0a8:101::1 | the 6to4 (2002::/16) form of 192.168.1.1, a private address (192.168.0.0/16)",
            })
    void each_forbidden_address_class_is_named(String literal, String expected) throws Exception {
        assertEquals(expected, EndpointGuard.forbiddenClass(InetAddress.getByName(literal)));
    }

    @ParameterizedTest(name = "{0} is {1}")
    @CsvSource(
            delimiter = '|',
            value = {
                "64:ff9b::7f00:1                  | the NAT64 (64:ff9b::/96) form of 127.0.0.1, a loopback address (127.0.0.0/8)",
                "64:ff9b::a00:1                   | the NAT64 (64:ff9b::/96) form of 10.0.0.1, a private address (10.0.0.0/8)",
                "64:ff9b:1::1                     | a local-use NAT64 address (64:ff9b:1::/48)",
                "64:ff9b:1:ffff::808:808          | a local-use NAT64 address (64:ff9b:1::/48)",
                "64:ff9b:1:808:808::              | a local-use NAT64 address (64:ff9b:1::/48)",
                "::ffff:0:7f00:1                  | the IPv4-translated form of 127.0.0.1, a loopback address (127.0.0.0/8)",
                "::ffff:0:a9fe:a9fe               | the IPv4-translated form of 169.254.169.254, the link-local cloud metadata address (169.254.169.254)",
                "::ffff:0:c0a8:101                | the IPv4-translated form of 192.168.1.1, a private address (192.168.0.0/16)",
                "::ffff:0:0:0                     | the IPv4-translated form of 0.0.0.0, an unspecified address (0.0.0.0/8)",
                "2002:7f00:1::1                   | the 6to4 (2002::/16) form of 127.0.0.1, a loopback address (127.0.0.0/8)",
                "2002:a00:1::                     | the 6to4 (2002::/16) form of 10.0.0.1, a private address (10.0.0.0/8)",
                "2002:a9fe:a9fe:1::1              | the 6to4 (2002::/16) form of 169.254.169.254, the link-local cloud metadata address (169.254.169.254)",
                "2002:6440:1::1                   | the 6to4 (2002::/16) form of 100.64.0.1, a carrier-grade NAT address (100.64.0.0/10)",
                "2001:0:a00:1::f7f7:f7f7          | the Teredo (2001::/32) server address 10.0.0.1, a private address (10.0.0.0/8)",
                "2001:0:7f00:1:8000:ffff:f7f7:f7f7 | the Teredo (2001::/32) server address 127.0.0.1, a loopback address (127.0.0.0/8)",
                "2001:0:808:808::80ff:fffe        | the Teredo (2001::/32) client address 127.0.0.1, a loopback address (127.0.0.0/8)",
                "2001:0:808:808:8000:ffff:3f57:fefe | the Teredo (2001::/32) client address 192.168.1.1, a private address (192.168.0.0/16)",
                "2001:0:808:808::5601:5601        | the Teredo (2001::/32) client address 169.254.169.254, the link-local cloud metadata address (169.254.169.254)",
                "2001:0:808:808::ffff:ffff        | the Teredo (2001::/32) client address 0.0.0.0, an unspecified address (0.0.0.0/8)",
            })
    void ipv6_forms_that_carry_a_forbidden_ipv4_address_are_refused_with_the_form_and_class(
            String literal, String expected) throws Exception {
        InetAddress address = InetAddress.getByName(literal);
        assertInstanceOf(Inet6Address.class, address, literal);
        assertEquals(expected, EndpointGuard.forbiddenClass(address));
    }

    /** The same forms carrying public IPv4 addresses are public (NAT64 /96, 6to4 and Teredo reach the internet). */
    @ParameterizedTest
    @ValueSource(
            strings = {
                "64:ff9b::808:808",
                "64:ff9b::101:101",
                "::ffff:0:808:808",
                "::ffff:0:5db8:d70e",
                "2002:808:808::1",
                "2002:5db8:d70e:1::1",
                "2001:0:808:808::f7f7:f7f7",
                "2001:0:4136:e378:8000:63bf:3fff:fdd2",
                "2001:0:101:101:0:ffff:a247:f2f1",
                "2001:1::1",
                "2001:4860:4860::8888",
                "64:ff9b:2::1",
                "2003::1"
            })
    void ipv6_forms_that_carry_a_public_ipv4_address_pass(String literal) throws Exception {
        InetAddress address = InetAddress.getByName(literal);
        assertInstanceOf(Inet6Address.class, address, literal);
        assertNull(EndpointGuard.forbiddenClass(address), literal);
    }

    @ParameterizedTest(name = "::ffff:{0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "127.0.0.1       | a loopback address (127.0.0.0/8)",
                "10.1.2.3        | a private address (10.0.0.0/8)",
                "169.254.169.254 | the link-local cloud metadata address (169.254.169.254)",
                "100.64.1.1      | a carrier-grade NAT address (100.64.0.0/10)",
                "0.0.0.0         | an unspecified address (0.0.0.0/8)",
            })
    void ipv4_mapped_ipv6_addresses_are_judged_by_their_ipv4_address(String v4, String inner) throws Exception {
        byte[] b = new byte[16];
        b[10] = (byte) 0xff;
        b[11] = (byte) 0xff;
        System.arraycopy(InetAddress.getByName(v4).getAddress(), 0, b, 12, 4);
        InetAddress mapped = Inet6Address.getByAddress(null, b, -1);
        assertInstanceOf(Inet6Address.class, mapped, "kept as IPv6 (a resolver may hand these out)");
        assertEquals("the IPv4-mapped form of " + v4 + ", " + inner, EndpointGuard.forbiddenClass(mapped));
        // Java's own parser turns the text form into the IPv4 address: refused just the same
        assertEquals(inner, EndpointGuard.forbiddenClass(InetAddress.getByName("::ffff:" + v4)));
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "93.184.215.14",
                "8.8.8.8",
                "1.1.1.1",
                "172.15.255.255",
                "172.32.0.1",
                "100.63.255.255",
                "100.128.0.1",
                "169.253.255.255",
                "192.167.255.255",
                "2606:4700:4700::1111",
                "2001:4860:4860::8888",
                "::ffff:8.8.8.8",
                "64:ff9b::808:808",
                "2002:808:808::1"
            })
    void public_addresses_pass(String literal) throws Exception {
        assertNull(EndpointGuard.forbiddenClass(InetAddress.getByName(literal)), literal);
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "http://127.0.0.1:8080/hooks",
                "http://[::1]/hooks",
                "https://10.0.0.7/x",
                "http://169.254.169.254/latest/meta-data/",
                "http://0.0.0.0:80/",
                "http://[::]/",
                "http://100.64.0.1/",
                "http://[::ffff:192.168.0.1]/",
                "http://2130706433/"
            })
    void literal_urls_in_forbidden_networks_are_refused_with_the_reason(String url) throws Exception {
        EndpointGuard.Refused refused =
                assertThrows(EndpointGuard.Refused.class, () -> STRICT.check(EndpointGuard.parse(url)));
        assertTrue(refused.getMessage().startsWith("refused: webhook host "), refused.getMessage());
        assertTrue(refused.getMessage().contains("SETTLE_WEBHOOK_ALLOWPRIVATE=true"), refused.getMessage());
    }

    @Test
    void the_message_names_host_address_and_class() {
        EndpointGuard.Refused refused = assertThrows(
                EndpointGuard.Refused.class, () -> STRICT.check(URI.create("http://169.254.169.254/latest")));
        assertEquals(
                "refused: webhook host 169.254.169.254 resolves to 169.254.169.254, the link-local cloud "
                        + "metadata address (169.254.169.254); private networks are allowed only with "
                        + "SETTLE_WEBHOOK_ALLOWPRIVATE=true (settle.webhook.allowprivate)",
                refused.getMessage());
    }

    @Test
    void one_private_address_among_public_ones_refuses_the_host() throws Exception {
        Map<String, InetAddress[]> dns = Map.of(
                "mixed.example",
                        new InetAddress[] {InetAddress.getByName("93.184.215.14"), InetAddress.getByName("10.0.0.5")},
                "public.example",
                        new InetAddress[] {InetAddress.getByName("93.184.215.14"), InetAddress.getByName("2606:4700::1")
                        });
        EndpointGuard guard = new EndpointGuard(false, host -> {
            InetAddress[] a = dns.get(host);
            if (a == null) {
                throw new UnknownHostException(host);
            }
            return a;
        });
        EndpointGuard.Refused refused =
                assertThrows(EndpointGuard.Refused.class, () -> guard.check(URI.create("https://mixed.example/hook")));
        assertTrue(
                refused.getMessage().contains("mixed.example resolves to 10.0.0.5, a private address (10.0.0.0/8)"),
                refused.getMessage());
        assertEquals(2, guard.check(URI.create("https://public.example/hook")).size());
        assertThrows(UnknownHostException.class, () -> guard.check(URI.create("https://nowhere.example/")));
    }

    /** A name whose only A/AAAA record is {@code address}: what an attacker's DNS zone can serve. */
    static EndpointGuard resolvingTo(InetAddress address) {
        return new EndpointGuard(false, host -> {
            if (!host.equals("hook.example")) {
                throw new UnknownHostException(host);
            }
            return new InetAddress[] {address};
        });
    }

    /** The literal as a resolver may hand it out; {@code ::ffff:a.b.c.d} kept as an IPv6 address. */
    static InetAddress address(String literal) throws UnknownHostException {
        if (literal.startsWith("::ffff:")) {
            byte[] b = new byte[16];
            b[10] = (byte) 0xff;
            b[11] = (byte) 0xff;
            System.arraycopy(InetAddress.getByName(literal.substring(7)).getAddress(), 0, b, 12, 4);
            return Inet6Address.getByAddress(null, b, -1);
        }
        return InetAddress.getByName(literal);
    }

    @ParameterizedTest(name = "hook.example → {0}")
    @CsvSource(
            delimiter = '|',
            value = {
                "127.0.0.1       | 127.0.0.1               | a loopback address (127.0.0.0/8)",
                "::1             | 0:0:0:0:0:0:0:1         | a loopback address (::1)",
                "169.254.169.254 | 169.254.169.254         | the link-local cloud metadata address (169.254.169.254)",
                "fd00:ec2::254   | fd00:ec2:0:0:0:0:0:254  | the unique local cloud metadata address (fd00:ec2::254)",
                "fd12:3456::1    | fd12:3456:0:0:0:0:0:1   | a private (unique local) address (fc00::/7)",
                "fc00::1         | fc00:0:0:0:0:0:0:1      | a private (unique local) address (fc00::/7)",
                "169.254.10.1    | 169.254.10.1            | a link-local address (169.254.0.0/16)",
                "fe80::1         | fe80:0:0:0:0:0:0:1      | a link-local address (fe80::/10)",
                "::ffff:10.0.0.1 | 0:0:0:0:0:ffff:a00:1    | the IPv4-mapped form of 10.0.0.1, a private address (10.0.0.0/8)",
                "0.0.0.0         | 0.0.0.0                 | an unspecified address (0.0.0.0/8)",
                "172.16.0.1      | 172.16.0.1              | a private address (172.16.0.0/12)",
                "172.31.255.254  | 172.31.255.254          | a private address (172.16.0.0/12)",
                "192.168.1.1     | 192.168.1.1             | a private address (192.168.0.0/16)",
                "10.0.0.1        | 10.0.0.1                | a private address (10.0.0.0/8)",
                "64:ff9b::7f00:1 | 64:ff9b:0:0:0:0:7f00:1  | the NAT64 (64:ff9b::/96) form of 127.0.0.1, a loopback address (127.0.0.0/8)",
                "64:ff9b:1::a00:1 | 64:ff9b:1:0:0:0:a00:1  | a local-use NAT64 address (64:ff9b:1::/48)",
                "0:0:0:0:ffff:0:a00:1 | 0:0:0:0:ffff:0:a00:1 | the IPv4-translated form of 10.0.0.1, a private address (10.0.0.0/8)",
                "2002:a9fe:a9fe::1 | 2002:a9fe:a9fe:0:0:0:0:1 | the 6to4 (2002::/16) form of 169.254.169.254, the link-local cloud metadata address (169.254.169.254)",
                "2001:0:808:808::80ff:fffe | 2001:0:808:808:0:0:80ff:fffe | the Teredo (2001::/32) client address 127.0.0.1, a loopback address (127.0.0.0/8)",
            })
    void a_dns_name_resolving_into_a_forbidden_class_is_refused_with_the_class_named(
            String literal, String shown, String forbiddenClass) throws Exception {
        InetAddress resolved = address(literal);
        EndpointGuard.Refused refused = assertThrows(
                EndpointGuard.Refused.class,
                () -> resolvingTo(resolved).check(EndpointGuard.parse("https://hook.example/settle")));
        assertEquals(
                "refused: webhook host hook.example resolves to " + shown + ", " + forbiddenClass
                        + "; private networks are allowed only with SETTLE_WEBHOOK_ALLOWPRIVATE=true "
                        + "(settle.webhook.allowprivate)",
                refused.getMessage());
        // the same name is let through when private networks are allowed, and refused only because of its address
        assertEquals(
                List.of(resolved),
                new EndpointGuard(true, host -> new InetAddress[] {resolved})
                        .check(URI.create("https://hook.example/settle")));
        assertEquals(
                1,
                resolvingTo(InetAddress.getByName("93.184.215.14"))
                        .check(URI.create("https://hook.example/settle"))
                        .size());
    }

    @Test
    void allow_private_lets_every_class_through() throws Exception {
        EndpointGuard open = EndpointGuard.system(true);
        for (String url :
                List.of("http://127.0.0.1/", "http://10.0.0.1/", "http://169.254.169.254/", "http://[::1]/")) {
            assertEquals(1, open.check(URI.create(url)).size(), url);
        }
    }

    @ParameterizedTest
    @ValueSource(
            strings = {
                "ftp://example.com/x",
                "file:///etc/passwd",
                "example.com/hook",
                "http:///nohost",
                "http://exa mple.com/",
                "gopher://127.0.0.1/",
                "http://127.1/"
            })
    void non_http_or_hostless_urls_are_refused(String url) {
        EndpointGuard.Refused refused = assertThrows(EndpointGuard.Refused.class, () -> EndpointGuard.parse(url));
        assertTrue(refused.getMessage().startsWith("refused: "), refused.getMessage());
    }
}
