package dev.settle.bench;

import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.atomic.AtomicLong;

/**
 * The naive design Settle is measured against, for comparison only (it lives in the bench, never in the
 * product): every message is answered as it arrives, under a database lock that is released a few milliseconds
 * after it was taken.
 *
 * <ol>
 *   <li>Store the message with the next version of its conversation (one transaction).</li>
 *   <li>Take the conversation's lock ({@code GET_LOCK}), read the conversation, release the lock: the "claim".</li>
 *   <li>Call the model with every message read, wait for the answer (the lock is long gone).</li>
 *   <li>POST the reply to the webhook receiver.</li>
 * </ol>
 * Its tables are its own ({@code naive_message}), in the same database as Settle's.
 */
final class NaiveBaseline implements AutoCloseable {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    static final String CREATE = """
            CREATE TABLE IF NOT EXISTS naive_message (
              session_id VARCHAR(128) NOT NULL, version BIGINT NOT NULL, text TEXT NOT NULL,
              created_at DATETIME(6) NOT NULL, PRIMARY KEY (session_id, version))""";
    static final String INSERT = """
            INSERT INTO naive_message (session_id, version, text, created_at)
            SELECT ?, COALESCE(MAX(version), 0) + 1, ?, UTC_TIMESTAMP(6) FROM naive_message WHERE session_id = ?""";

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final String modelUrl;
    private final String webhookUrl;
    private final HttpClient http =
            HttpClient.newBuilder().version(HttpClient.Version.HTTP_1_1).build();
    private final ExecutorService workers = Executors.newVirtualThreadPerTaskExecutor();
    final AtomicLong tokens = new AtomicLong();
    final Map<String, AtomicLong> tokensBySid = new ConcurrentHashMap<>();

    NaiveBaseline(JdbcTemplate jdbc, TransactionTemplate tx, String modelUrl, String webhookUrl) {
        this.jdbc = jdbc;
        this.tx = tx;
        this.modelUrl = modelUrl;
        this.webhookUrl = webhookUrl;
        jdbc.execute(CREATE);
    }

    /** Accepts a message (returns its version once stored) and answers it in the background. */
    long accept(String sid, String text) {
        Long version = tx.execute(st -> {
            jdbc.update(INSERT, sid, text, sid);
            return jdbc.queryForObject("SELECT MAX(version) FROM naive_message WHERE session_id = ?", Long.class, sid);
        });
        workers.execute(() -> answer(sid));
        return version;
    }

    private void answer(String sid) {
        try {
            List<Map<String, Object>> rows = jdbc.execute((java.sql.Connection c) -> {
                try (var lock = c.prepareStatement("SELECT GET_LOCK(?, 5)")) {
                    lock.setString(1, "naive:" + sid);
                    lock.executeQuery().close();
                }
                List<Map<String, Object>> read = new ArrayList<>();
                try (var q = c.prepareStatement(
                        "SELECT version, text FROM naive_message WHERE session_id = ? ORDER BY version")) {
                    q.setString(1, sid);
                    try (var rs = q.executeQuery()) {
                        while (rs.next()) {
                            read.add(Map.of("version", rs.getLong(1), "text", rs.getString(2)));
                        }
                    }
                }
                try (var unlock = c.prepareStatement("SELECT RELEASE_LOCK(?)")) {
                    unlock.setString(1, "naive:" + sid);
                    unlock.executeQuery().close();
                }
                return read;
            });
            long covers =
                    rows.stream().mapToLong(r -> (Long) r.get("version")).max().orElse(0);
            List<Map<String, Object>> messages = new ArrayList<>();
            messages.add(Map.of("role", "system", "content", "You are a bookkeeping assistant."));
            rows.forEach(r -> messages.add(Map.of("role", "user", "content", r.get("text"))));
            String body = JSON.writeValueAsString(Map.of("model", "bench", "messages", messages));
            HttpResponse<String> answer = http.send(
                    HttpRequest.newBuilder(URI.create(modelUrl + "/chat/completions"))
                            .header("Content-Type", "application/json")
                            .timeout(Duration.ofSeconds(60))
                            .POST(HttpRequest.BodyPublishers.ofString(body))
                            .build(),
                    HttpResponse.BodyHandlers.ofString());
            JsonNode json = JSON.readTree(answer.body());
            long used = json.path("usage").path("total_tokens").asLong();
            tokens.addAndGet(used);
            tokensBySid.computeIfAbsent(sid, k -> new AtomicLong()).addAndGet(used);
            Map<String, Object> data = new LinkedHashMap<>();
            data.put("sessionId", sid);
            data.put("coversVersion", covers);
            data.put(
                    "text",
                    json.path("choices").path(0).path("message").path("content").asString());
            String hook = JSON.writeValueAsString(Map.of("type", "reply.created", "data", data));
            http.send(
                    HttpRequest.newBuilder(URI.create(webhookUrl))
                            .header("Content-Type", "application/json")
                            .header("webhook-id", "naive_" + UUID.randomUUID())
                            .POST(HttpRequest.BodyPublishers.ofString(hook))
                            .build(),
                    HttpResponse.BodyHandlers.discarding());
        } catch (Exception e) {
            System.err.println("[bench] naive baseline failed for " + sid + ": " + e);
        }
    }

    @Override
    public void close() {
        workers.shutdownNow();
    }
}
