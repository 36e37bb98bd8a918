package dev.settle.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Set;
import java.util.concurrent.ThreadLocalRandom;

/**
 * A port that was free a moment ago, below the kernel's ephemeral range and never the same twice in a JVM. A port from
 * the ephemeral range (what binding port 0 hands out) can be taken by any outgoing connection between this check and
 * its use, or while a process that owns it restarts; ports below that range are only ever bound on purpose.
 */
public final class FreePort {
    private static final int LOWEST = 10_000;
    private static final Set<Integer> GIVEN = new HashSet<>();

    private FreePort() {}

    public static synchronized int find() {
        int below = ephemeralStart();
        for (int attempt = 0; attempt < 500 && below > LOWEST; attempt++) {
            int port = ThreadLocalRandom.current().nextInt(LOWEST, below);
            if (!GIVEN.contains(port) && free(port)) {
                GIVEN.add(port);
                return port;
            }
        }
        try (ServerSocket socket = new ServerSocket(0)) {
            GIVEN.add(socket.getLocalPort());
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private static boolean free(int port) {
        try (ServerSocket socket = new ServerSocket()) {
            socket.setReuseAddress(false);
            socket.bind(new InetSocketAddress(port));
            return true;
        } catch (IOException taken) {
            return false;
        }
    }

    /** The first port of the kernel's ephemeral range (Linux), else 32768. */
    private static int ephemeralStart() {
        try {
            String range = Files.readString(Path.of("/proc/sys/net/ipv4/ip_local_port_range"));
            return Integer.parseInt(range.strip().split("\\s+")[0]);
        } catch (IOException | RuntimeException unknown) {
            return 32_768;
        }
    }
}
