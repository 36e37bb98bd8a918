package dev.settle.agent.webhook;

import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Random;

import static dev.settle.agent.webhook.WebhookNode.sleep;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The retry schedule on the wire: the gaps between attempts the receiver sees are the schedule's delays with the
 * seeded jitter. The delay is counted from the moment the failed attempt is recorded, so a gap is never shorter
 * than its jittered delay (minus clock granularity), and longer by at most the poll interval and the round trip
 * (a generous slack on a loaded machine).
 */
class WebhookScheduleTest {
    static final long SEED = 4242;
    static final long EPSILON_MS = 5;
    static final long SLACK_MS = 400;

    @Test
    void attempts_arrive_after_the_jittered_delays_of_the_schedule_and_stop_when_it_is_exhausted() {
        List<Duration> schedule = List.of(Duration.ZERO, Duration.ofMillis(200), Duration.ofMillis(400));
        // the dispatcher's generator draws once per retry, in order: replay the same draws
        Random replay = new Random(SEED);
        List<Duration> expected = List.of(
                RetrySchedule.jittered(schedule.get(1), replay), RetrySchedule.jittered(schedule.get(2), replay));
        try (WebhookReceiver receiver = WebhookReceiver.start();
                WebhookNode node = WebhookNode.start(
                        "schedule",
                        Map.of(
                                "settle.webhook.schedule",
                                "0s,200ms,400ms",
                                "settle.webhook.jitter-seed",
                                Long.toString(SEED)))) {
            receiver.answerWith(d -> WebhookReceiver.Answer.status(500));
            long id = node.enqueue(node.session("schedule-1"), "schedule-1", receiver.url(), "scheduled");
            await("failed")
                    .atMost(Duration.ofSeconds(20))
                    .pollInterval(Duration.ofMillis(10))
                    .pollInSameThread()
                    .until(() -> "FAILED".equals(node.status(id)));
            sleep(Duration.ofSeconds(1));
            List<WebhookReceiver.Delivery> all = receiver.deliveries();
            assertEquals(3, all.size(), "one attempt per schedule entry");
            for (int i = 1; i <= 2; i++) {
                long gap = Duration.between(
                                all.get(i - 1).receivedAt(), all.get(i).receivedAt())
                        .toMillis();
                long jittered = expected.get(i - 1).toMillis();
                long nominal = schedule.get(i).toMillis();
                assertTrue(jittered >= nominal * 0.8 && jittered <= nominal * 1.2, "within ±20 %: " + jittered);
                assertTrue(gap >= jittered - EPSILON_MS, "gap " + i + " = " + gap + " ms, delay " + jittered + " ms");
                assertTrue(gap <= jittered + SLACK_MS, "gap " + i + " = " + gap + " ms, delay " + jittered + " ms");
                assertTrue(gap >= nominal * 0.8 - EPSILON_MS, "never earlier than the jitter bound allows");
            }
        }
    }
}
