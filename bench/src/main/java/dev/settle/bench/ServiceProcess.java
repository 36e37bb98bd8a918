package dev.settle.bench;

import dev.settle.bench.bare.BareAcceptApp;
import dev.settle.embedded.AppLauncher;
import dev.settle.embedded.EmbeddedKafka;
import dev.settle.ingest.IngestApiApplication;
import jdk.jfr.Configuration;
import jdk.jfr.Recording;
import org.springframework.context.ConfigurableApplicationContext;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;

/**
 * One service in a JVM of its own, so that the load generator's CPU is not counted as the service's: {@code ingest}
 * (ingest-api), {@code bare} ({@link BareAcceptApp}) or {@code kafka} (the quickstart's broker, {@link EmbeddedKafka}),
 * then {@code key=value} properties. Prints {@code READY <port>} once started (the broker: its PLAINTEXT port). Commands on standard input, one a line:
 * {@code JFR START} starts a profiling recording, {@code JFR STOP <file>} dumps it to the file and prints
 * {@code JFR DONE}. Stops when its standard input closes.
 */
public final class ServiceProcess {
    private ServiceProcess() {}

    public static void main(String[] args) throws Exception {
        Map<String, Object> props = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            int eq = args[i].indexOf('=');
            props.put(args[i].substring(0, eq), args[i].substring(eq + 1));
        }
        AutoCloseable service;
        int port;
        if (args[0].equals("kafka")) {
            EmbeddedKafka kafka = EmbeddedKafka.start(0);
            service = kafka;
            String servers = kafka.bootstrapServers();
            port = Integer.parseInt(servers.substring(servers.lastIndexOf(':') + 1));
        } else {
            ConfigurableApplicationContext ctx = switch (args[0]) {
                case "ingest" ->
                    AppLauncher.run(IngestApiApplication.class, IngestApiApplication.defaultProperties(), props);
                case "bare" -> AppLauncher.run(BareAcceptApp.class, BareAcceptApp.defaultProperties(), props);
                default -> throw new IllegalArgumentException("unknown service " + args[0]);
            };
            service = ctx;
            port = AppLauncher.port(ctx);
        }
        System.out.println("READY " + port);
        System.out.flush();
        Recording recording = null;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.equals("JFR START")) {
                recording = new Recording(Configuration.getConfiguration("profile"));
                recording.setToDisk(true);
                recording.start();
            } else if (line.startsWith("JFR STOP ") && recording != null) {
                recording.stop();
                recording.dump(Path.of(line.substring("JFR STOP ".length())));
                recording.close();
                recording = null;
                System.out.println("JFR DONE");
                System.out.flush();
            }
        }
        service.close();
        System.exit(0);
    }
}
