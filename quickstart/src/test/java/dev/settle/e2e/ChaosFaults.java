package dev.settle.e2e;

import dev.settle.schema.EventCodec;
import dev.settle.schema.SessionReady;
import dev.settle.schema.Topics;
import dev.settle.testsupport.KafkaBrokerProcess;
import dev.settle.testsupport.WebhookReceiver;
import org.springframework.kafka.core.KafkaTemplate;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Injects faults at random moments while the workload runs, and counts them by kind: an agent worker (its
 * own JVM) killed with SIGKILL and replaced, or frozen past its lease TTL and resumed (it must be fenced);
 * database connections killed; wake-up events redelivered and dropped (timer rows deleted); the webhook
 * receiver down, slow or answering 500; the model erroring, hanging and slow; and, given a
 * {@link KafkaBrokerProcess}, the Kafka broker killed with SIGKILL, kept down 2–6 s and restarted on the same
 * port with its data (the first fault of every run, then about one fault in twelve).
 *
 * <p>Faults run one at a time on one thread. While the broker is down a probe message is posted to a session
 * of its own: its 202 must come at once ({@link #violations} otherwise), and the time until it is answered
 * measures how long the system took to recover ({@link #brokerRestarts}).
 */
final class ChaosFaults implements AutoCloseable {
    /** A kill of an agent process: when, and which leases it held. */
    record Kill(Instant at, Map<Long, String> leases) {
    }

    /**
     * A broker restart: how long it was kept down before the restart began, when it answered again and when
     * the probe posted while it was down was answered, all in ms after the kill; and how long the probe's 202 took.
     */
    record BrokerRestart(long downMillis, long answeringMillis, long probeAnsweredMillis, long probePostMillis) {
    }

    static final String BROKER_RESTARTED = "Kafka broker restarted (SIGKILL, down 2-6 s, same port and data)";
    /** The slowest acceptable 202 while the broker is down: the API promises 202 at once. */
    static final Duration PROBE_POST_LIMIT = Duration.ofMillis(1000);

    final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
    final List<Kill> kills = new ArrayList<>();
    final List<BrokerRestart> brokerRestarts = new ArrayList<>();
    /** Broken promises seen by the injector itself (the history checker sees the rest). */
    final List<String> violations = new ArrayList<>();
    private final SettleSystem settle;
    private final ChaosModel model;
    private final Supplier<AgentProcess> newAgent;
    private final Duration ttl;
    private final KafkaBrokerProcess broker;
    private final Random random = new Random(5);
    private volatile AgentProcess agent;
    private volatile boolean running = true;
    private final Thread thread;

    /** @param broker the broker the system runs on, to restart; null to leave the broker alone */
    ChaosFaults(SettleSystem settle, ChaosModel model, AgentProcess first, Supplier<AgentProcess> newAgent, Duration ttl,
                KafkaBrokerProcess broker) {
        this.broker = broker;
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
        boolean first = true;
        while (running) {
            SettleSystem.sleep(Duration.ofMillis(1500 + random.nextInt(2500)));
            if (!running) {
                return;
            }
            try {
                if (broker != null && (first || random.nextInt(12) == 0)) {
                    first = false;
                    restartBroker();
                    continue;
                }
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

    /**
     * SIGKILL the broker, post a probe message while it is down (the 202 must not wait for Kafka), keep it down
     * 2–6 s, restart it on the same port and wait until the probe is answered.
     */
    private void restartBroker() {
        long down = 2000 + random.nextInt(4001);
        String probe = "probe-broker-" + UUID.randomUUID();
        broker.kill();
        long killed = System.nanoTime();
        ChaosWorkload.ApiResult r = settle.postWithKey(probe, "are you there after the broker restart?", null);
        long postMillis = millisSince(killed);
        if (r.status() != 202) {
            violation("probe " + probe + " posted while the broker was down answered " + r.status() + ": " + r.body());
        } else if (postMillis > PROBE_POST_LIMIT.toMillis()) {
            violation("probe " + probe + " posted while the broker was down took " + postMillis + " ms to answer 202");
        }
        SettleSystem.sleep(Duration.ofMillis(Math.max(0, down - millisSince(killed))));
        count(BROKER_RESTARTED);
        broker.restart();
        long answering = millisSince(killed);
        long answered = -1;
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (System.nanoTime() < deadline) {
            List<Long> replied = settle.jdbc.queryForList(
                    "SELECT replied_version FROM chat_session WHERE external_id = ?", Long.class, probe);
            if (!replied.isEmpty() && replied.getFirst() >= 1) {
                answered = millisSince(killed);
                break;
            }
            SettleSystem.sleep(Duration.ofMillis(50));
        }
        if (answered < 0 && r.status() == 202) {
            violation("probe " + probe + " posted while the broker was down was not answered within 90 s of the restart");
        }
        synchronized (brokerRestarts) {
            brokerRestarts.add(new BrokerRestart(down, answering, answered, postMillis));
        }
    }

    private void violation(String v) {
        synchronized (violations) {
            violations.add(v);
        }
    }

    private static long millisSince(long nanos) {
        return (System.nanoTime() - nanos) / 1_000_000;
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
