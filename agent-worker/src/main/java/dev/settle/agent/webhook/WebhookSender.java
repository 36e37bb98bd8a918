package dev.settle.agent.webhook;

import com.standardwebhooks.Webhook;
import dev.settle.agent.AgentSettings;
import org.springframework.stereotype.Component;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;

/**
 * One signed POST per attempt, per the Standard Webhooks spec: {@code webhook-id} (stable per reply),
 * {@code webhook-timestamp} (per attempt) and {@code webhook-signature} made by the reference library with
 * every configured secret (space-separated during rotation). Redirects are not followed.
 */
@Component
public class WebhookSender {
    /** What the endpoint answered; status null when no answer came (connection error, timeout). */
    public record Result(Integer status, String error, long latencyMicros) {
        public boolean ok() {
            return status != null && status >= 200 && status < 300;
        }
    }

    private final HttpClient http;
    private final List<Webhook> signers = new ArrayList<>();
    private final AgentSettings.Webhook settings;

    public WebhookSender(AgentSettings settings) {
        this.settings = settings.webhook();
        this.http = HttpClient.newBuilder()
                .followRedirects(HttpClient.Redirect.NEVER)
                .connectTimeout(Duration.ofSeconds(5))
                .build();
        String secrets = this.settings.secret();
        if (secrets != null && !secrets.isBlank()) {
            for (String secret : secrets.trim().split("\\s+")) {
                signers.add(new Webhook(secret));
            }
        }
    }

    public boolean configured() {
        return settings.url() != null && !settings.url().isBlank();
    }

    public Result send(String webhookId, String payload) {
        long started = System.nanoTime();
        try {
            long timestamp = System.currentTimeMillis() / 1000;
            HttpRequest.Builder request = HttpRequest.newBuilder(URI.create(settings.url()))
                    .timeout(settings.timeout())
                    .header("Content-Type", "application/json")
                    .header("User-Agent", "Settle-Webhooks/1")
                    .header("webhook-id", webhookId)
                    .header("webhook-timestamp", Long.toString(timestamp))
                    .POST(HttpRequest.BodyPublishers.ofString(payload));
            if (!signers.isEmpty()) {
                List<String> signatures = new ArrayList<>();
                for (Webhook signer : signers) {
                    signatures.add(signer.sign(webhookId, timestamp, payload));
                }
                request.header("webhook-signature", String.join(" ", signatures));
            }
            HttpResponse<Void> response = http.send(request.build(), HttpResponse.BodyHandlers.discarding());
            return new Result(response.statusCode(), null, (System.nanoTime() - started) / 1000);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return new Result(null, "interrupted", (System.nanoTime() - started) / 1000);
        } catch (Exception e) {
            return new Result(null, e.toString(), (System.nanoTime() - started) / 1000);
        }
    }
}
