package dev.settle.agent.webhook;

import java.net.Inet4Address;
import java.net.Inet6Address;
import java.net.InetAddress;
import java.net.URI;
import java.net.UnknownHostException;
import java.util.List;
import java.util.Locale;
import java.util.function.Function;

/**
 * The SSRF guard: a webhook is never sent to an address inside a private network unless
 * {@code SETTLE_WEBHOOK_ALLOWPRIVATE=true}.
 *
 * <ol>
 *   <li>The URL must be absolute http(s) with a host.</li>
 *   <li>The host is resolved once, and <em>every</em> address it resolves to is checked (one bad A/AAAA record
 *       refuses the URL). {@link #check} returns the checked addresses, and the sender connects only to one of
 *       them: nothing resolves the name a second time, so there is no window for DNS rebinding.</li>
 *   <li>Refused: unspecified (0.0.0.0/8, ::), loopback (127/8, ::1), private (10/8, 172.16/12, 192.168/16,
 *       fc00::/7 with the fd00:ec2::254 metadata address, fec0::/10), link-local (169.254/16 with the 169.254.169.254 metadata address, fe80::/10), CGNAT
 *       (100.64/10), IETF/benchmark ranges (192.0.0/24, 198.18/15), multicast and reserved (224/4, 240/4, ff00::/8),
 *       and the local-use NAT64 prefix 64:ff9b:1::/48 as a whole (its IPv4 may sit at several offsets).</li>
 *   <li>IPv6 forms that carry an IPv4 address are judged by that IPv4 address: IPv4-mapped (::ffff:a.b.c.d),
 *       IPv4-translated (::ffff:0:a.b.c.d), IPv4-compatible (::a.b.c.d), NAT64 (64:ff9b::/96, the last 32 bits),
 *       6to4 (2002::/16, bits 16–47) and Teredo (2001::/32: the server at bits 32–63 and the client, the last
 *       32 bits inverted; refused when either one is forbidden).</li>
 * </ol>
 */
public final class EndpointGuard {
    /** Resolves a host name to all its addresses ({@link InetAddress#getAllByName} in production). */
    @FunctionalInterface
    public interface Resolver {
        InetAddress[] resolve(String host) throws UnknownHostException;
    }

    /** The URL may not be called; the message says why, for last_error and for the operator. */
    public static final class Refused extends Exception {
        Refused(String message) {
            super(message);
        }
    }

    private final boolean allowPrivate;
    private final Resolver resolver;
    private final Function<InetAddress, String> classifier;

    public EndpointGuard(boolean allowPrivate, Resolver resolver) {
        this(allowPrivate, resolver, EndpointGuard::forbiddenClass);
    }

    /** @param classifier the forbidden class of an address, or null when it may be called ({@link #forbiddenClass}) */
    EndpointGuard(boolean allowPrivate, Resolver resolver, Function<InetAddress, String> classifier) {
        this.allowPrivate = allowPrivate;
        this.resolver = resolver;
        this.classifier = classifier;
    }

    public static EndpointGuard system(boolean allowPrivate) {
        return new EndpointGuard(allowPrivate, InetAddress::getAllByName);
    }

    /** Checks scheme and host without resolving it; returns the parsed URI. */
    public static URI parse(String url) throws Refused {
        URI uri;
        try {
            uri = new URI(url.trim());
        } catch (Exception e) {
            throw new Refused("refused: " + url + " is not a valid URL (" + e.getMessage() + ")");
        }
        String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
        if (!scheme.equals("http") && !scheme.equals("https")) {
            throw new Refused("refused: " + url + " is not an http(s) URL");
        }
        if (uri.getHost() == null || uri.getHost().isBlank()) {
            throw new Refused("refused: " + url + " has no valid host");
        }
        return uri;
    }

    /**
     * Resolves the host once and checks every address. The caller connects only to the returned addresses.
     *
     * @return every address the host resolves to, all of them allowed
     * @throws Refused when one is in a forbidden network (and private ones are not allowed)
     * @throws UnknownHostException when the host does not resolve
     */
    public List<InetAddress> check(URI uri) throws Refused, UnknownHostException {
        String host = uri.getHost();
        InetAddress[] addresses = resolver.resolve(host);
        if (addresses == null || addresses.length == 0) {
            throw new UnknownHostException(host);
        }
        if (!allowPrivate) {
            for (InetAddress address : addresses) {
                String forbidden = classifier.apply(address);
                if (forbidden != null) {
                    throw new Refused("refused: webhook host " + host + " resolves to " + address.getHostAddress()
                            + ", " + forbidden + "; private networks are allowed only with "
                            + "SETTLE_WEBHOOK_ALLOWPRIVATE=true (settle.webhook.allowprivate)");
                }
            }
        }
        return List.of(addresses);
    }

    /** The forbidden network this address is in ("a loopback address (127.0.0.0/8)"), or null if public. */
    static String forbiddenClass(InetAddress address) {
        byte[] b = address.getAddress();
        if (address instanceof Inet4Address) {
            return forbiddenV4(b);
        }
        if (address instanceof Inet6Address) {
            return forbiddenV6(b);
        }
        return "an address of unknown family";
    }

    private static String forbiddenV4(byte[] b) {
        int a0 = b[0] & 0xff;
        int a1 = b[1] & 0xff;
        int a2 = b[2] & 0xff;
        int a3 = b[3] & 0xff;
        if (a0 == 0) {
            return "an unspecified address (0.0.0.0/8)";
        }
        if (a0 == 127) {
            return "a loopback address (127.0.0.0/8)";
        }
        if (a0 == 10) {
            return "a private address (10.0.0.0/8)";
        }
        if (a0 == 172 && (a1 & 0xf0) == 16) {
            return "a private address (172.16.0.0/12)";
        }
        if (a0 == 192 && a1 == 168) {
            return "a private address (192.168.0.0/16)";
        }
        if (a0 == 169 && a1 == 254) {
            return a2 == 169 && a3 == 254
                    ? "the link-local cloud metadata address (169.254.169.254)"
                    : "a link-local address (169.254.0.0/16)";
        }
        if (a0 == 100 && (a1 & 0xc0) == 64) {
            return "a carrier-grade NAT address (100.64.0.0/10)";
        }
        if (a0 == 192 && a1 == 0 && a2 == 0) {
            return "an IETF protocol address (192.0.0.0/24)";
        }
        if (a0 == 198 && (a1 & 0xfe) == 18) {
            return "a benchmarking address (198.18.0.0/15)";
        }
        if (a0 >= 224 && a0 <= 239) {
            return "a multicast address (224.0.0.0/4)";
        }
        if (a0 >= 240) {
            return "a reserved or broadcast address (240.0.0.0/4)";
        }
        return null;
    }

    /** fd00:ec2::254, the IPv6 address of the EC2 instance metadata service (inside fc00::/7). */
    private static final byte[] AWS_METADATA_V6 = {
        (byte) 0xfd, 0, 0x0e, (byte) 0xc2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02, 0x54
    };

    private static String forbiddenV6(byte[] b) {
        boolean first8Zero = true;
        for (int i = 0; i < 8; i++) {
            first8Zero &= b[i] == 0;
        }
        boolean first10Zero = first8Zero && b[8] == 0 && b[9] == 0;
        if (first10Zero && (b[10] & 0xff) == 0xff && (b[11] & 0xff) == 0xff) {
            return embedded("IPv4-mapped form of", b, 12);
        }
        if (first8Zero && (b[8] & 0xff) == 0xff && (b[9] & 0xff) == 0xff && b[10] == 0 && b[11] == 0) {
            return embedded("IPv4-translated form of", b, 12);
        }
        if (first10Zero && b[10] == 0 && b[11] == 0) {
            boolean high12Zero = b[12] == 0 && b[13] == 0 && b[14] == 0;
            if (high12Zero && b[15] == 0) {
                return "an unspecified address (::)";
            }
            if (high12Zero && b[15] == 1) {
                return "a loopback address (::1)";
            }
            return embedded("IPv4-compatible form of", b, 12);
        }
        int b0 = b[0] & 0xff;
        int b1 = b[1] & 0xff;
        if (java.util.Arrays.equals(b, AWS_METADATA_V6)) {
            return "the unique local cloud metadata address (fd00:ec2::254)";
        }
        if ((b0 & 0xfe) == 0xfc) {
            return "a private (unique local) address (fc00::/7)";
        }
        if (b0 == 0xfe && (b1 & 0xc0) == 0x80) {
            return "a link-local address (fe80::/10)";
        }
        if (b0 == 0xfe && (b1 & 0xc0) == 0xc0) {
            return "a private (site-local) address (fec0::/10)";
        }
        if (b0 == 0xff) {
            return "a multicast address (ff00::/8)";
        }
        if (b0 == 0x00 && b1 == 0x64 && (b[2] & 0xff) == 0xff && (b[3] & 0xff) == 0x9b) {
            boolean zeros = true;
            for (int i = 4; i < 12; i++) {
                zeros &= b[i] == 0;
            }
            if (zeros) {
                return embedded("NAT64 (64:ff9b::/96) form of", b, 12);
            }
        }
        if (b0 == 0x00 && b1 == 0x64 && (b[2] & 0xff) == 0xff && (b[3] & 0xff) == 0x9b && b[4] == 0 && b[5] == 1) {
            return "a local-use NAT64 address (64:ff9b:1::/48)";
        }
        if (b0 == 0x20 && b1 == 0x02) {
            return embedded("6to4 (2002::/16) form of", b, 2);
        }
        if (b0 == 0x20 && b1 == 0x01 && b[2] == 0 && b[3] == 0) {
            String server = embedded("Teredo (2001::/32) server address", b, 4);
            if (server != null) {
                return server;
            }
            byte[] client = {(byte) ~b[12], (byte) ~b[13], (byte) ~b[14], (byte) ~b[15]};
            return embedded("Teredo (2001::/32) client address", client, 0);
        }
        return null;
    }

    /** "the {what} a.b.c.d, {its class}" when the IPv4 address at {@code offset} is forbidden, else null. */
    private static String embedded(String what, byte[] b, int offset) {
        byte[] v4 = {b[offset], b[offset + 1], b[offset + 2], b[offset + 3]};
        String inner = forbiddenV4(v4);
        return inner == null
                ? null
                : "the " + what + " " + (v4[0] & 0xff) + "." + (v4[1] & 0xff) + "." + (v4[2] & 0xff) + "."
                        + (v4[3] & 0xff) + ", " + inner;
    }
}
