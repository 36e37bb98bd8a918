package dev.settle.e2e;

import dev.settle.schema.EventCodec;
import dev.settle.schema.SessionReady;
import dev.settle.schema.Topics;
import dev.settle.testsupport.WebhookReceiver;
import org.springframework.kafka.core.KafkaTemplate;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Injects faults at random moments while the workload runs, and counts them by kind: an agent worker (its
 * own JVM) killed with SIGKILL and replaced, or frozen past its lease TTL and resumed (it must be fenced);
 * database connections killed; wake-up events redelivered and dropped (timer rows deleted); the webhook
 * receiver down, slow or answering 500; the model erroring, hanging and slow.
 */
final class ChaosFaults implements AutoCloseable {
    /** A kill of an agent process: when, and which leases it held. */
    record Kill(Instant at, Map<Long, String> leases) {
    }

    final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
    final List<Kill> kills = new ArrayList<>();
    private final SettleSystem settle;
    private final ChaosModel model;
    private final Supplier<AgentProcess> newAgent;
    private final Duration ttl;
    private final Random random = new Random(5);
    private volatile AgentProcess agent;
    private volatile boolean running = true;
    private final Thread thread;

    ChaosFaults(SettleSystem settle, ChaosModel model, AgentProcess first, Supplier<AgentProcess> newAgent, Duration ttl) {
        this.settle = settle;
        this.model = model;
        this.agent = first;
        this.newAgent = newAgent;
        this.ttl = ttl;
        this.thread = Thread.ofPlatform().name("chaos-faults").start(this::loop);
    }

    private void count(String kind) {
        counts.computeIfAbsent(kind, k -> new AtomicInteger()).incrementAndGet();
    }

    private void loop() {
        while (running) {
            SettleSystem.sleep(Duration.ofMillis(1500 + random.nextInt(2500)));
            if (!running) {
                return;
            }
            try {
                switch (random.nextInt(9)) {
                    case 0 -> killAgent();
                    case 1 -> pauseAgent();
                    case 2 -> killConnections();
                    case 3 -> redeliverEvents();
                    case 4 -> dropEvents();
                    case 5 -> receiverTrouble();
                    case 6, 7 -> modelTrouble();
                    default -> count("none");
                }
            } catch (Exception e) {
                count("injector-error");
                System.err.println("fault injection failed: " + e);
            }
        }
    }

    private void killAgent() throws Exception {
        AgentProcess victim = agent;
        if (victim == null || !victim.alive()) {
            return;
        }
        Map<Long, String> leases = new ConcurrentHashMap<>();
        settle.jdbc.query("SELECT id, lease_token FROM chat_session WHERE lease_token IS NOT NULL",
                rs -> {
                    leases.put(rs.getLong(1), rs.getString(2));
                });
        victim.kill();
        synchronized (kills) {
            kills.add(new Kill(Instant.now(), leases));
        }
        count("agent killed (SIGKILL)");
        agent = newAgent.get();
    }

    private void pauseAgent() throws Exception {
        AgentProcess victim = agent;
        if (victim == null || !victim.alive()) {
            return;
        }
        victim.pause();
        SettleSystem.sleep(ttl.plusMillis(1000 + random.nextInt(1000)));
        victim.resume();
        count("agent paused past the lease TTL");
    }

    private void killConnections() {
        List<Long> ids = settle.jdbc.queryForList("""
                SELECT ID FROM information_schema.PROCESSLIST
                 WHERE DB = DATABASE() AND ID <> CONNECTION_ID() AND COMMAND <> 'Daemon'""", Long.class);
        int killed = 0;
        for (Long id : ids) {
            if (random.nextInt(3) == 0) {
                try {
                    settle.jdbc.execute("KILL CONNECTION " + id);
                    killed++;
                } catch (RuntimeException gone) {
                    // already closed
                }
            }
        }
        if (killed > 0) {
            counts.computeIfAbsent("database connections killed", k -> new AtomicInteger()).addAndGet(killed);
        }
    }

    @SuppressWarnings("unchecked")
    private void redeliverEvents() {
        KafkaTemplate<String, String> kafka = settle.ingest.getBean(KafkaTemplate.class);
        for (Long id : settle.jdbc.queryForList("SELECT id FROM chat_session ORDER BY RAND() LIMIT 10", Long.class)) {
            kafka.send(Topics.SESSION_READY, Long.toString(id), EventCodec.encode(new SessionReady(id, 1, "window", Instant.now())));
        }
        count("SessionReady events redelivered (x10)");
    }

    private void dropEvents() {
        int dropped = settle.jdbc.update("DELETE FROM debounce_timer ORDER BY RAND() LIMIT 3");
        counts.computeIfAbsent("armed timers dropped (lost wake-ups)", k -> new AtomicInteger()).addAndGet(dropped);
    }

    private void receiverTrouble() {
        int kind = random.nextInt(3);
        settle.receiver.answerWith(d -> switch (kind) {
            case 0 -> WebhookReceiver.Answer.status(503);
            case 1 -> WebhookReceiver.Answer.status(200).delay(Duration.ofMillis(800));
            default -> WebhookReceiver.Answer.status(500);
        });
        count(kind == 0 ? "webhook receiver down" : kind == 1 ? "webhook receiver slow" : "webhook receiver answering 500");
        SettleSystem.sleep(Duration.ofMillis(1500 + random.nextInt(1500)));
        settle.receiver.answerWith(d -> WebhookReceiver.Answer.status(200));
    }

    private void modelTrouble() {
        ChaosModel.Mode mode = ChaosModel.Mode.values()[1 + random.nextInt(3)];
        model.mode = mode;
        count("model " + mode.name().toLowerCase());
        SettleSystem.sleep(Duration.ofMillis(1500 + random.nextInt(2000)));
        model.mode = ChaosModel.Mode.NORMAL;
        if (mode == ChaosModel.Mode.HANG) {
            settle.model.releaseHangs();
        }
    }

    AgentProcess agent() {
        return agent;
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        thread.join();
        model.mode = ChaosModel.Mode.NORMAL;
        settle.model.releaseHangs();
        settle.receiver.answerWith(d -> WebhookReceiver.Answer.status(200));
    }
}
