package dev.settle.testsupport;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.time.Instant;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * A raw-socket front for a test double's HTTP server: clients connect here, every connection is piped to the server
 * through a connection of its own, and the front watches both sides. {@code com.sun.net.httpserver} gives a handler no
 * way to notice that a client closed its connection while the handler writes nothing; the front does, at once,
 * because it always reads from the client. A handler finds its client's connection by its exchange's remote port
 * ({@link #connection(int)}).
 */
final class ClientFront implements AutoCloseable {
    /** One client connection: bytes that reached the client, and when (if) the client closed it first. */
    static final class Connection {
        private final AtomicLong toClient = new AtomicLong();
        private final CountDownLatch clientLeft = new CountDownLatch(1);
        private volatile Instant clientLeftAt;
        private volatile boolean serverClosed;

        long bytesToClient() {
            return toClient.get();
        }

        /** When the client closed the connection before the server did; null while it has not. */
        Instant clientLeftAt() {
            return clientLeftAt;
        }

        /** Waits up to {@code nanos} for the client to leave; true when it has. */
        boolean awaitClientLeft(long nanos) throws InterruptedException {
            return clientLeft.await(nanos, TimeUnit.NANOSECONDS);
        }

        private void clientLeft() {
            if (!serverClosed && clientLeftAt == null) {
                clientLeftAt = Instant.now();
                clientLeft.countDown();
            }
        }
    }

    private final ServerSocket listener;
    private final int serverPort;
    private final ExecutorService threads = Executors.newVirtualThreadPerTaskExecutor();
    private final Map<Integer, Connection> byServerSidePort = new ConcurrentHashMap<>();

    private ClientFront(ServerSocket listener, int serverPort) {
        this.listener = listener;
        this.serverPort = serverPort;
    }

    static ClientFront start(int serverPort) {
        try {
            ClientFront front = new ClientFront(new ServerSocket(0, 50, InetAddress.getLoopbackAddress()), serverPort);
            front.threads.submit(front::accept);
            return front;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    int port() {
        return listener.getLocalPort();
    }

    /** The client connection behind a server-side exchange whose remote port is {@code port}, or null. */
    Connection connection(int port) {
        return byServerSidePort.get(port);
    }

    private void accept() {
        while (!listener.isClosed()) {
            try {
                Socket client = listener.accept();
                threads.submit(() -> pipe(client));
            } catch (IOException e) {
                return; // closed
            }
        }
    }

    private void pipe(Socket client) {
        Connection c = new Connection();
        try (client;
                Socket server = new Socket()) {
            server.connect(new InetSocketAddress(InetAddress.getLoopbackAddress(), serverPort));
            client.setTcpNoDelay(true);
            server.setTcpNoDelay(true);
            byServerSidePort.put(server.getLocalPort(), c);
            threads.submit(() -> {
                try {
                    copy(server.getInputStream(), client.getOutputStream(), c.toClient);
                    c.serverClosed = true;
                } catch (IOException e) {
                    c.clientLeft(); // writing to the client failed: it is gone
                }
                closeQuietly(client);
                closeQuietly(server);
            });
            try {
                copy(client.getInputStream(), server.getOutputStream(), new AtomicLong());
            } catch (IOException e) {
                // a reset by the client, or the other direction closed the sockets
            }
            c.clientLeft();
        } catch (IOException e) {
            c.clientLeft();
        }
    }

    private static void copy(InputStream in, OutputStream out, AtomicLong count) throws IOException {
        byte[] buffer = new byte[8192];
        for (int n; (n = in.read(buffer)) >= 0; ) {
            out.write(buffer, 0, n);
            out.flush();
            count.addAndGet(n);
        }
    }

    private static void closeQuietly(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing is all that is wanted
        }
    }

    @Override
    public void close() {
        try {
            listener.close();
        } catch (IOException ignored) {
            // closing is all that is wanted
        }
        threads.shutdownNow();
    }
}
