package dev.settle.testsupport;

import com.standardwebhooks.Webhook;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.time.Instant;
import java.util.Base64;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;

/** Drives {@link WebhookReceiver} with the JDK HTTP client and bodies signed by the standardwebhooks library. */
class WebhookReceiverTest {
    private static final String SECRET =
            "whsec_" + Base64.getEncoder().encodeToString("0123456789abcdef0123456789abcdef".getBytes());
    private static final HttpClient HTTP = HttpClient.newHttpClient();

    private static WebhookReceiver receiver;

    @BeforeAll
    static void start() {
        receiver = WebhookReceiver.start();
    }

    @AfterAll
    static void stop() {
        receiver.close();
    }

    @BeforeEach
    void reset() {
        receiver.reset();
    }

    private static int post(String id, String body, String signedBody) throws Exception {
        long timestamp = Instant.now().getEpochSecond();
        String signature = new Webhook(SECRET).sign(id, timestamp, signedBody);
        HttpResponse<String> response = HTTP.send(
                HttpRequest.newBuilder(URI.create(receiver.url()))
                        .header("content-type", "application/json")
                        .header("webhook-id", id)
                        .header("webhook-timestamp", Long.toString(timestamp))
                        .header("webhook-signature", signature)
                        .POST(HttpRequest.BodyPublishers.ofString(body))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        receiver.awaitAnswered(Duration.ofSeconds(5));
        return response.statusCode();
    }

    @Test
    void recordsAndVerifiesASignedDelivery() throws Exception {
        String body = "{\"type\":\"reply.created\",\"data\":{\"text\":\"héllo\"}}";

        assertThat(post("msg_1", body, body)).isEqualTo(200);

        assertThat(receiver.url()).matches("http://127\\.0\\.0\\.1:\\d+/hooks");
        WebhookReceiver.Delivery delivery = receiver.deliveries().getFirst();
        assertThat(delivery.path()).isEqualTo("/hooks");
        assertThat(delivery.webhookId()).isEqualTo("msg_1");
        assertThat(delivery.body()).isEqualTo(body);
        assertThat(delivery.json().path("data").path("text").asString()).isEqualTo("héllo");
        assertThat(delivery.status()).isEqualTo(200);
        assertThat(delivery.headers().get("content-type")).containsExactly("application/json");
        assertThat(WebhookReceiver.verify(SECRET, delivery)).isTrue();
        assertThat(WebhookReceiver.verify("whsec_" + Base64.getEncoder().encodeToString(new byte[32]), delivery))
                .isFalse();
        assertThat(receiver.acknowledged()).containsExactly(delivery);
    }

    @Test
    void rejectsATamperedBody() throws Exception {
        assertThat(post("msg_2", "{\"amount\":1000}", "{\"amount\":10}")).isEqualTo(200);

        assertThat(WebhookReceiver.verify(SECRET, receiver.deliveries().getFirst()))
                .isFalse();
    }

    @Test
    void answersTheScriptedSequenceThenOk() throws Exception {
        receiver.answerSequence(500, 500);
        String body = "{\"n\":1}";

        List<Integer> statuses =
                List.of(post("msg_3", body, body), post("msg_3", body, body), post("msg_3", body, body));

        assertThat(statuses).containsExactly(500, 500, 200);
        assertThat(receiver.deliveries())
                .extracting(WebhookReceiver.Delivery::status)
                .containsExactly(500, 500, 200);
        receiver.awaitAcknowledged(1, Duration.ofSeconds(1));
        assertThat(receiver.acknowledged()).hasSize(1);
    }

    @Test
    void answersWithScriptedHeadersAndDelay() throws Exception {
        receiver.answerWith(d ->
                WebhookReceiver.Answer.status(429).header("Retry-After", "3").delay(Duration.ofMillis(200)));
        long start = System.nanoTime();

        HttpResponse<String> response = HTTP.send(
                HttpRequest.newBuilder(URI.create(receiver.url() + "/other"))
                        .POST(HttpRequest.BodyPublishers.ofString("not json"))
                        .build(),
                HttpResponse.BodyHandlers.ofString());

        assertThat(response.statusCode()).isEqualTo(429);
        assertThat(response.headers().firstValue("Retry-After")).contains("3");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(200));
        WebhookReceiver.Delivery delivery = receiver.deliveries().getFirst();
        assertThat(delivery.path()).isEqualTo("/hooks/other");
        assertThat(delivery.json()).isNull();
        assertThat(WebhookReceiver.verify(SECRET, delivery)).isFalse();
        assertThat(receiver.acknowledged()).isEmpty();
    }
}
