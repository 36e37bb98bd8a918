package dev.settle.agent.webhook;

import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.Test;

import java.net.InetAddress;
import java.net.UnknownHostException;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTimeoutPreemptively;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The SSRF check's DNS lookup runs under the attempt's deadline: a resolver that hangs cannot hold an attempt
 * (and so its claim, timeout + margin) past the timeout, and lookup plus exchange share one deadline.
 */
class WebhookSenderDeadlineTest {
    static final Duration GENEROUS = Duration.ofSeconds(30);

    /** Answers the host's own address after {@code delay} (the receiver's 127.0.0.1); private networks allowed. */
    static EndpointGuard slowDns(Duration delay) {
        return new EndpointGuard(true, host -> {
            try {
                Thread.sleep(delay);
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            return new InetAddress[] {InetAddress.getByName(host)};
        });
    }

    @Test
    void a_resolver_that_never_answers_fails_the_attempt_at_the_deadline_and_nothing_is_sent() throws Exception {
        CountDownLatch never = new CountDownLatch(1);
        AtomicBoolean lookupInterrupted = new AtomicBoolean();
        CountDownLatch lookupEnded = new CountDownLatch(1);
        EndpointGuard hanging = new EndpointGuard(false, host -> {
            try {
                never.await();
            } catch (InterruptedException e) {
                lookupInterrupted.set(true);
            } finally {
                lookupEnded.countDown();
            }
            throw new UnknownHostException(host);
        });
        try (WebhookReceiver receiver = WebhookReceiver.start();
                WebhookSender sender = new WebhookSender(WebhookNode.SECRET, Duration.ofMillis(500), hanging)) {
            WebhookSender.Result r = assertTimeoutPreemptively(
                    GENEROUS, () -> sender.send("https://hook.example/settle", "wh_msg_1", 1_700_000_000L, "{}"));
            assertNull(r.status());
            assertFalse(r.sent());
            assertEquals("timeout: resolving hook.example took longer than the 500 ms deadline; not sent", r.error());
            assertTrue(r.latencyMicros() >= 500_000, "not before the deadline: " + r.latencyMicros());
            assertEquals(0, receiver.deliveries().size());
            assertTrue(lookupEnded.await(GENEROUS.toMillis(), TimeUnit.MILLISECONDS));
            assertTrue(lookupInterrupted.get(), "the abandoned lookup was interrupted");
            // the verdict: a failed attempt, retried on the schedule like any timeout
            AttemptVerdict verdict = AttemptVerdict.of(
                    r,
                    1,
                    new RetrySchedule(List.of(Duration.ZERO, Duration.ofSeconds(5)), new Random(1)),
                    Duration.ofHours(1),
                    Instant.now());
            assertTrue(verdict instanceof AttemptVerdict.Retry, verdict.toString());
        }
    }

    @Test
    void lookup_and_exchange_share_one_deadline() {
        Duration timeout = Duration.ofSeconds(2);
        try (WebhookReceiver receiver = WebhookReceiver.start()) {
            // 1.2 s of DNS + 1.2 s of waiting for the answer: each alone fits in 2 s, together they do not
            receiver.answerWith(d -> WebhookReceiver.Answer.status(200).delay(Duration.ofMillis(1200)));
            try (WebhookSender sender =
                    new WebhookSender(WebhookNode.SECRET, timeout, slowDns(Duration.ofMillis(1200)))) {
                WebhookSender.Result r = assertTimeoutPreemptively(
                        GENEROUS, () -> sender.send(receiver.url(), "wh_msg_2", 1_700_000_000L, "{}"));
                assertNull(r.status());
                assertTrue(r.sent(), "the request went out after the lookup");
                assertEquals("timeout: no complete answer within 2000 ms", r.error());
                assertEquals(1, receiver.deliveries().size());
            }

            // a slow lookup that leaves time for the exchange is fine
            receiver.reset();
            try (WebhookSender sender =
                    new WebhookSender(WebhookNode.SECRET, timeout, slowDns(Duration.ofMillis(300)))) {
                WebhookSender.Result r = assertTimeoutPreemptively(
                        GENEROUS, () -> sender.send(receiver.url(), "wh_msg_3", 1_700_000_000L, "{}"));
                assertEquals(200, r.status(), String.valueOf(r.error()));
                assertEquals(1, receiver.acknowledged().size());
                assertEquals("wh_msg_3", receiver.acknowledged().getFirst().webhookId());
            }
        }
    }
}
