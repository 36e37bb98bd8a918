package dev.settle.embedded;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.ServerSocket;

/** A port that was free a moment ago on the loopback interface. */
public final class FreePort {
    private FreePort() {}

    public static int find() {
        try (ServerSocket socket = new ServerSocket(0)) {
            socket.setReuseAddress(true);
            return socket.getLocalPort();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }
}
