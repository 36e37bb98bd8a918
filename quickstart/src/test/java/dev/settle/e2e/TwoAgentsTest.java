package dev.settle.e2e;

import dev.settle.schema.EventCodec;
import dev.settle.schema.SessionReady;
import dev.settle.schema.Topics;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.WebhookReceiver;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.core.KafkaTemplate;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static dev.settle.e2e.SettleSystem.await;
import static dev.settle.e2e.SettleSystem.sleep;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * Two agent-worker instances on the same events, every SessionReady delivered three times, bursts posted
 * concurrently from several "devices": never two replies for one version, exactly one per burst.
 */
class TwoAgentsTest {
    static SettleSystem settle;

    @BeforeAll
    static void start() {
        settle = new SettleSystem("twoagents");
        settle.startAgent();
    }

    @AfterAll
    static void stop() {
        settle.close();
    }

    @Test
    @SuppressWarnings("unchecked")
    void sixty_concurrent_bursts_with_duplicated_events_get_exactly_one_reply_each() throws Exception {
        Random random = new Random(42);
        settle.model.respondWith(r -> ModelDouble.echo(r).delay(Duration.ofMillis(200 + random.nextInt(300))));
        int sessions = 60;
        List<String> ids = new ArrayList<>();
        List<Integer> sizes = new ArrayList<>();
        for (int i = 0; i < sessions; i++) {
            ids.add(SettleSystem.newSessionId());
            sizes.add(1 + random.nextInt(3));
        }
        KafkaTemplate<String, String> kafka = settle.ingest.getBean(KafkaTemplate.class);
        try (ExecutorService devices = Executors.newFixedThreadPool(12)) {
            List<Future<?>> posts = new ArrayList<>();
            for (int i = 0; i < sessions; i++) {
                String s = ids.get(i);
                int n = sizes.get(i);
                CyclicBarrier together = new CyclicBarrier(n);
                for (int m = 0; m < n; m++) {
                    int k = m;
                    posts.add(devices.submit(() -> {
                        together.await();
                        return settle.post(s, "device " + k + " of " + s);
                    }));
                }
            }
            for (Future<?> f : posts) {
                f.get();
            }
        }
        // every session's wake-up hint, repeated: both instances see duplicates while turns run and after
        for (int round = 0; round < 2; round++) {
            for (String s : ids) {
                long pk = settle.sessionPk(s);
                kafka.send(Topics.SESSION_READY, Long.toString(pk),
                        EventCodec.encode(new SessionReady(pk, 1, "window", Instant.now())));
            }
            sleep(Duration.ofMillis(300));
        }

        await("all sessions answered", Duration.ofSeconds(90), () -> ids.stream().allMatch(s ->
                settle.replies(s).size() == 1 && settle.webhooks(s).size() == 1));
        sleep(Duration.ofSeconds(2));
        for (int i = 0; i < sessions; i++) {
            String s = ids.get(i);
            List<long[]> replies = settle.replies(s);
            assertEquals(1, replies.size(), s);
            assertEquals(1, replies.getFirst()[0], s);
            assertEquals((long) sizes.get(i), replies.getFirst()[1], s);
            List<WebhookReceiver.Delivery> hooks = settle.webhooks(s);
            assertEquals(1, hooks.size(), s);
            assertEquals(sizes.get(i), hooks.getFirst().json().get("data").get("coversVersion").asInt(), s);
            assertEquals(1, settle.modelCallsMentioning(s), "one model call for " + s);
            assertEquals(List.of("COMMITTED"), settle.turnStates(s), s);
        }
    }
}
