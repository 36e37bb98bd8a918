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
 * receiver down, slow or answering 500; the model erroring, hanging and slow. These run one at a time on one
 * thread.
 *
 * <p>Given a {@link KafkaBrokerProcess}, a second thread meanwhile kills the Kafka broker with SIGKILL, keeps it
 * down 2–6 s and restarts it on the same port with its data: 2–4 s into every run, then every 15–45 s, so the
 * other faults also land while the broker is down or restarting (an agent replaced then starts without a
 * broker). Right after each kill a probe message is posted to a session of its own; the time until it is
 * answered measures how long the system took to recover ({@link #brokerRestarts}). Every POST that started
 * while the broker was away must still have answered within {@link #OUTAGE_POST_LIMIT}, unless it overlapped
 * an agent freeze ({@link #slowPostsDuringOutages}): the API promises its 202 at once, whatever Kafka does.
 */
final class ChaosFaults implements AutoCloseable {
    /** A kill of an agent process: when, and which leases it held. */
    record Kill(Instant at, Map<Long, String> leases) {
    }

    /**
     * A broker restart: how long it was kept down before the restart began, when it answered again and when
     * the probe posted while it was down was answered, all in ms after the kill; and how long the probe's 202 took.
     */
    record BrokerRestart(long killedNanos, long downMillis, long answeringMillis, long probeAnsweredMillis,
                         long probePostMillis) {
    }

    static final String BROKER_RESTARTED = "Kafka broker restarted (SIGKILL, down 2-6 s, same port and data)";
    /**
     * The slowest acceptable answer to a POST while the broker is away. The API promises its 202 at once; an
     * ingest that waits for the producer answers after {@code max.block.ms} (2 s) or later.
     */
    static final Duration OUTAGE_POST_LIMIT = Duration.ofMillis(1500);

    final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
    final List<Kill> kills = new ArrayList<>();
    final List<BrokerRestart> brokerRestarts = new ArrayList<>();
    /** Agent freezes: {SIGSTOP, SIGCONT} in System.nanoTime. */
    private final List<long[]> freezes = new ArrayList<>();
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
    private final Thread brokerThread;
    /** From the broker kill until it answers again. */
    private volatile boolean brokerAway;
    private final Random brokerRandom = new Random(7);

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
        this.brokerThread = broker == null ? null : Thread.ofPlatform().name("chaos-broker").start(this::brokerLoop);
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
        long frozen = System.nanoTime();
        victim.pause();
        SettleSystem.sleep(ttl.plusMillis(1000 + random.nextInt(1000)));
        victim.resume();
        synchronized (freezes) {
            freezes.add(new long[] {frozen, System.nanoTime()});
        }
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
        if (brokerAway) {
            return; // each send would wait max.block.ms for the broker and hold up the other faults
        }
        KafkaTemplate<String, String> kafka = settle.ingest.getBean(KafkaTemplate.class);
        try {
            for (Long id : settle.jdbc.queryForList("SELECT id FROM chat_session ORDER BY RAND() LIMIT 10", Long.class)) {
                kafka.send(Topics.SESSION_READY, Long.toString(id), EventCodec.encode(new SessionReady(id, 1, "window", Instant.now())));
            }
        } catch (org.springframework.kafka.KafkaException brokerJustKilled) {
            return;
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

    private void brokerLoop() {
        Duration pause = Duration.ofMillis(2000 + brokerRandom.nextInt(2000));
        while (running) {
            long until = System.nanoTime() + pause.toNanos();
            while (running && System.nanoTime() < until) {
                SettleSystem.sleep(Duration.ofMillis(100));
            }
            if (!running) {
                return;
            }
            try {
                restartBroker();
            } catch (Exception e) {
                count("injector-error");
                System.err.println("broker restart failed: " + e);
            }
            pause = Duration.ofMillis(15_000 + brokerRandom.nextInt(30_000));
        }
    }

    /**
     * SIGKILL the broker, post a probe message while it is down, keep it down 2–6 s, restart it on the same
     * port and wait until the probe is answered.
     */
    private void restartBroker() {
        long down = 2000 + brokerRandom.nextInt(4001);
        String probe = "probe-broker-" + UUID.randomUUID();
        brokerAway = true;
        broker.kill();
        long killed = System.nanoTime();
        ChaosWorkload.ApiResult r = settle.postWithKey(probe, "are you there after the broker restart?", null);
        long postMillis = millisSince(killed);
        for (int retry = 0; r.status() == 503 && retry < 10; retry++) { // a database connection killed meanwhile
            SettleSystem.sleep(Duration.ofMillis(300));
            r = settle.postWithKey(probe, "are you there after the broker restart?", null);
        }
        if (r.status() != 202) {
            violation("probe " + probe + " posted while the broker was down answered " + r.status() + ": " + r.body());
        }
        SettleSystem.sleep(Duration.ofMillis(Math.max(0, down - millisSince(killed))));
        count(BROKER_RESTARTED);
        broker.restart();
        long answering = millisSince(killed);
        brokerAway = false;
        long answered = -1;
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        while (System.nanoTime() < deadline) {
            List<Map<String, Object>> row = settle.jdbc.queryForList(
                    "SELECT version, replied_version, failed_version FROM chat_session WHERE external_id = ?", probe);
            if (!row.isEmpty() && ((Number) row.getFirst().get("replied_version")).longValue() >= 1) {
                answered = millisSince(killed);
                break;
            }
            if (!row.isEmpty() && ((Number) row.getFirst().get("failed_version")).longValue()
                    >= ((Number) row.getFirst().get("version")).longValue()) {
                settle.postPath("/v1/sessions/" + probe + "/retry"); // the model failed meanwhile: retry, as a client would
            }
            SettleSystem.sleep(Duration.ofMillis(50));
        }
        if (answered < 0 && r.status() == 202) {
            violation("probe " + probe + " posted while the broker was down was not answered within 90 s of the restart");
        }
        synchronized (brokerRestarts) {
            brokerRestarts.add(new BrokerRestart(killed, down, answering, answered, postMillis));
        }
    }

    /**
     * POSTs ({start nanos, duration nanos}) started while the broker was away that took over the limit. A POST
     * that overlapped an agent freeze is not judged: the frozen JVM may hold the session's row lock mid-turn,
     * which delays a POST to that session whether Kafka is up or not.
     */
    List<String> slowPostsDuringOutages(List<long[]> posts) {
        List<String> slow = new ArrayList<>();
        List<long[]> frozen;
        synchronized (freezes) {
            frozen = List.copyOf(freezes);
        }
        synchronized (brokerRestarts) {
            for (BrokerRestart r : brokerRestarts) {
                long from = r.killedNanos();
                long to = from + r.answeringMillis() * 1_000_000;
                posts.stream().filter(p -> p[0] >= from && p[0] <= to && p[1] / 1_000_000 > OUTAGE_POST_LIMIT.toMillis())
                        .filter(p -> frozen.stream().noneMatch(f -> p[0] <= f[1] && p[0] + p[1] >= f[0]))
                        .forEach(p -> slow.add("a POST " + (p[0] - from) / 1_000_000 + " ms after the broker kill took "
                                + p[1] / 1_000_000 + " ms to answer (limit " + OUTAGE_POST_LIMIT.toMillis() + " ms)"));
            }
        }
        return slow;
    }

    /** The slowest POST ({start nanos, duration nanos}) in ms, and how many there were, inside or outside broker outages. */
    long[] postLatency(List<long[]> posts, boolean duringOutage) {
        List<BrokerRestart> restarts;
        synchronized (brokerRestarts) {
            restarts = List.copyOf(brokerRestarts);
        }
        long max = 0;
        long n = 0;
        for (long[] p : posts) {
            boolean inside = restarts.stream().anyMatch(r -> p[0] >= r.killedNanos()
                    && p[0] <= r.killedNanos() + r.answeringMillis() * 1_000_000);
            if (inside == duringOutage) {
                n++;
                max = Math.max(max, p[1] / 1_000_000);
            }
        }
        return new long[] {n, max};
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
        if (brokerThread != null) {
            brokerThread.join(); // a restart in progress finishes: the broker is up when this returns
        }
        model.mode = ChaosModel.Mode.NORMAL;
        settle.model.releaseHangs();
        settle.receiver.answerWith(d -> WebhookReceiver.Answer.status(200));
    }
}
