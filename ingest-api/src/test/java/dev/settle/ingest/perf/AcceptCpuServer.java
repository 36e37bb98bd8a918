package dev.settle.ingest.perf;

import dev.settle.ingest.IngestApp;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.Map;

/**
 * The ingest API alone in its own JVM, for {@link AcceptCpuProbe}: args are the JDBC URL and the Kafka bootstrap
 * servers, then {@code key=value} properties; prints {@code READY <port>} and runs until its stdin closes.
 */
public final class AcceptCpuServer {
    private AcceptCpuServer() {}

    public static void main(String[] args) throws Exception {
        Map<String, Object> extra = new HashMap<>();
        for (int i = 2; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            extra.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        try (IngestApp app = new IngestApp(args[0], args[1], extra)) {
            System.out.println("READY " + app.base);
            System.out.flush();
            BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
            while (in.readLine() != null) {
                // runs until the probe closes stdin
            }
        }
        System.exit(0);
    }
}
