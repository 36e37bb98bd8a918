package dev.settle.e2e;

import dev.settle.contracts.EventCodec;
import dev.settle.contracts.SessionReady;
import dev.settle.contracts.Topics;
import dev.settle.schema.DbTime;
import dev.settle.testsupport.KafkaBrokerProcess;
import dev.settle.testsupport.WebhookReceiver;
import org.springframework.kafka.core.KafkaTemplate;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * Injects faults at random moments while the workload runs, and counts them by kind: an agent worker killed
 * with SIGKILL and replaced, or frozen past its lease TTL and resumed (it must be fenced), the victim drawn from
 * every instance (each runs in a JVM of its own, see {@link AgentProcess}) that is up, provided enough of the
 * others are up to take over (two for a kill, one for a freeze);
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
    /**
     * A kill of an agent process: when, which leases were held then (session → token, of every instance), when
     * each lease still held right after the kill expires (session → lease_expires_at, database clock; a takeover's
     * delay splits into the wait for the expiry and what came after it), and which of those leases were renewed
     * after the kill ({@link #watchRenewals}). A renewed lease has a live holder: if it is lost later, its
     * takeover is not the kill's. A lease never renewed after the kill expires within the TTL of it, whoever held it.
     */
    record Kill(Instant at, Map<Long, String> leases, Map<Long, Instant> expiries, Set<Long> renewed) {}

    /**
     * A broker restart: how long it was kept down before the restart began, when it answered again and when
     * the probe posted while it was down was answered, all in ms after the kill; and how long the probe's 202 took.
     */
    record BrokerRestart(
            long killedNanos, long downMillis, long answeringMillis, long probeAnsweredMillis, long probePostMillis) {}

    static final String BROKER_RESTARTED = "Kafka broker restarted (SIGKILL, down 2-6 s, same port and data)";
    /**
     * The slowest acceptable answer to a POST while the broker is away. The API promises its 202 at once; an
     * ingest that waits for the producer answers after {@code max.block.ms} (2 s) or later.
     */
    static final Duration OUTAGE_POST_LIMIT = Duration.ofMillis(1500);

    final Map<String, AtomicInteger> counts = new ConcurrentHashMap<>();
    final List<Kill> kills = new ArrayList<>();
    private final List<Thread> renewalWatches = java.util.Collections.synchronizedList(new ArrayList<>());
    final List<BrokerRestart> brokerRestarts = new ArrayList<>();
    /** Agent freezes: {SIGSTOP, SIGCONT} in System.nanoTime. */
    private final List<long[]> freezes = new ArrayList<>();
    /** Per agent instance (slot): {kills, freezes} it suffered. */
    final int[][] hits;
    /** Every fault injected by the fault thread: what, and when (System.nanoTime), for the checker's details. */
    record Span(String what, long from, long to) {}

    final List<Span> timeline = java.util.Collections.synchronizedList(new ArrayList<>());
    /** Broken promises seen by the injector itself (the history checker sees the rest). */
    final List<String> violations = new ArrayList<>();

    private final SettleSystem settle;
    private final ChaosModel model;
    private final Supplier<AgentProcess> newAgent;
    /** The agent instances, one per slot; a killed one is replaced in its slot. */
    private final List<AgentProcess> agents;

    private final Duration ttl;
    private final KafkaBrokerProcess broker;
    private final Random random = new Random(5);
    private volatile boolean running = true;
    private final Thread thread;
    private final Thread brokerThread;
    /** From the broker kill until it answers again. */
    private volatile boolean brokerAway;

    private final Random brokerRandom = new Random(7);

    /** @param broker the broker the system runs on, to restart; null to leave the broker alone */
    ChaosFaults(
            SettleSystem settle,
            ChaosModel model,
            List<AgentProcess> agents,
            Supplier<AgentProcess> newAgent,
            Duration ttl,
            KafkaBrokerProcess broker) {
        this.broker = broker;
        this.settle = settle;
        this.model = model;
        this.agents = java.util.Collections.synchronizedList(new ArrayList<>(agents));
        this.hits = new int[agents.size()][2];
        this.newAgent = newAgent;
        this.ttl = ttl;
        this.thread = Thread.ofPlatform().name("chaos-faults").start(this::loop);
        this.brokerThread =
                broker == null ? null : Thread.ofPlatform().name("chaos-broker").start(this::brokerLoop);
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
            long from = System.nanoTime();
            try {
                String what = switch (random.nextInt(9)) {
                    case 0 -> killAgent();
                    case 1 -> pauseAgent();
                    case 2 -> killConnections();
                    case 3 -> redeliverEvents();
                    case 4 -> dropEvents();
                    case 5 -> receiverTrouble();
                    case 6, 7 -> modelTrouble();
                    default -> {
                        count("none");
                        yield null;
                    }
                };
                if (what != null) {
                    timeline.add(new Span(what, from, System.nanoTime()));
                }
            } catch (Exception e) {
                count("injector-error");
                System.err.println("fault injection failed: " + e);
            }
        }
    }

    /**
     * A random agent instance that is up (alive, its application started), if at least {@code othersUp} other
     * instances are up too; -1 otherwise.
     */
    private int victim(int othersUp) {
        List<Integer> up = new ArrayList<>();
        for (int i = 0; i < agents.size(); i++) {
            AgentProcess a = agents.get(i);
            if (a.alive() && a.logContains("Started AgentWorkerApplication")) {
                up.add(i);
            }
        }
        return up.size() < othersUp + 1 ? -1 : up.get(random.nextInt(up.size()));
    }

    /** SIGKILL an agent instance while two others are up to take over its sessions, and start its replacement. */
    private String killAgent() throws Exception {
        int slot = victim(2);
        if (slot < 0) {
            count("agent kill skipped (a replacement still starting)");
            return null;
        }
        AgentProcess victim = agents.get(slot);
        Map<Long, String> leases = new ConcurrentHashMap<>();
        settle.jdbc.query("SELECT id, lease_token FROM chat_session WHERE lease_token IS NOT NULL", rs -> {
            leases.put(rs.getLong(1), rs.getString(2));
        });
        victim.kill();
        Instant at = Instant.now();
        Map<Long, Instant> expiries = new ConcurrentHashMap<>();
        settle.jdbc.query(
                "SELECT id, lease_token, lease_expires_at FROM chat_session WHERE lease_token IS NOT NULL", rs -> {
                    if (rs.getString(2).equals(leases.get(rs.getLong(1)))) {
                        expiries.put(rs.getLong(1), DbTime.instant(rs, "lease_expires_at"));
                    }
                });
        Kill kill = new Kill(at, leases, expiries, ConcurrentHashMap.newKeySet());
        synchronized (kills) {
            kills.add(kill);
        }
        renewalWatches.add(Thread.ofPlatform().name("chaos-renewals").start(() -> watchRenewals(kill)));
        count("agent killed (SIGKILL)");
        hits[slot][0]++;
        agents.set(slot, newAgent.get());
        return "agent " + (slot + 1) + " killed (SIGKILL)";
    }

    /**
     * For a TTL and a half after the kill (live holders renew every third of a TTL), notes the leases of
     * {@code kill} whose expiry moved past the one read right after the kill: their holders were alive.
     */
    private void watchRenewals(Kill kill) {
        long until = System.nanoTime() + ttl.multipliedBy(3).dividedBy(2).toNanos();
        while (System.nanoTime() < until) {
            try {
                settle.jdbc.query(
                        "SELECT id, lease_token, lease_expires_at FROM chat_session WHERE lease_token IS NOT NULL",
                        rs -> {
                            long id = rs.getLong(1);
                            Instant before = kill.expiries().get(id);
                            if (before != null
                                    && rs.getString(2).equals(kill.leases().get(id))
                                    && DbTime.instant(rs, "lease_expires_at").isAfter(before)) {
                                kill.renewed().add(id);
                            }
                        });
            } catch (RuntimeException e) {
                // a connection killed by the fault thread: look again
            }
            SettleSystem.sleep(Duration.ofMillis(200));
        }
    }

    /** SIGSTOP an agent instance past its lease TTL while another is up, then SIGCONT. */
    private String pauseAgent() throws Exception {
        int slot = victim(1);
        if (slot < 0) {
            count("agent freeze skipped (no other instance up)");
            return null;
        }
        AgentProcess victim = agents.get(slot);
        long frozen = System.nanoTime();
        victim.pause();
        SettleSystem.sleep(ttl.plusMillis(1000 + random.nextInt(1000)));
        victim.resume();
        synchronized (freezes) {
            freezes.add(new long[] {frozen, System.nanoTime()});
        }
        count("agent paused past the lease TTL");
        hits[slot][1]++;
        return "agent " + (slot + 1) + " frozen (SIGSTOP) for " + millisSince(frozen) + " ms";
    }

    private String killConnections() {
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
            counts.computeIfAbsent("database connections killed", k -> new AtomicInteger())
                    .addAndGet(killed);
        }
        return killed + " database connections killed";
    }

    @SuppressWarnings("unchecked")
    private String redeliverEvents() {
        if (brokerAway) {
            return null; // each send would wait max.block.ms for the broker and hold up the other faults
        }
        KafkaTemplate<String, String> kafka = settle.ingest.getBean(KafkaTemplate.class);
        try {
            for (Long id :
                    settle.jdbc.queryForList("SELECT id FROM chat_session ORDER BY RAND() LIMIT 10", Long.class)) {
                kafka.send(
                        Topics.SESSION_READY,
                        Long.toString(id),
                        EventCodec.encode(new SessionReady(id, 1, "window", Instant.now())));
            }
        } catch (org.springframework.kafka.KafkaException brokerJustKilled) {
            return null;
        }
        count("SessionReady events redelivered (x10)");
        return "SessionReady events redelivered (x10)";
    }

    private String dropEvents() {
        int dropped = settle.jdbc.update("DELETE FROM debounce_timer ORDER BY RAND() LIMIT 3");
        counts.computeIfAbsent("armed timers dropped (lost wake-ups)", k -> new AtomicInteger())
                .addAndGet(dropped);
        return dropped + " armed timers dropped";
    }

    private String receiverTrouble() {
        int kind = random.nextInt(3);
        settle.receiver.answerWith(d -> switch (kind) {
            case 0 -> WebhookReceiver.Answer.status(503);
            case 1 -> WebhookReceiver.Answer.status(200).delay(Duration.ofMillis(800));
            default -> WebhookReceiver.Answer.status(500);
        });
        String what = kind == 0
                ? "webhook receiver down"
                : kind == 1 ? "webhook receiver slow" : "webhook receiver answering 500";
        count(what);
        SettleSystem.sleep(Duration.ofMillis(1500 + random.nextInt(1500)));
        settle.receiver.answerWith(d -> WebhookReceiver.Answer.status(200));
        return what;
    }

    private String modelTrouble() {
        ChaosModel.Mode mode = ChaosModel.Mode.values()[1 + random.nextInt(3)];
        model.mode = mode;
        count("model " + mode.name().toLowerCase());
        SettleSystem.sleep(Duration.ofMillis(1500 + random.nextInt(2000)));
        model.mode = ChaosModel.Mode.NORMAL;
        if (mode == ChaosModel.Mode.HANG) {
            settle.model.releaseHangs();
        }
        return "model " + mode.name().toLowerCase();
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
            List<Map<String, Object>> row;
            try {
                row = settle.jdbc.queryForList(
                        "SELECT version, replied_version, failed_version FROM chat_session WHERE external_id = ?",
                        probe);
            } catch (org.springframework.dao.DataAccessException connectionKilled) {
                // the connection-killing fault hit this query: ask again, so that the restart is still recorded
                SettleSystem.sleep(Duration.ofMillis(50));
                continue;
            }
            if (!row.isEmpty() && ((Number) row.getFirst().get("replied_version")).longValue() >= 1) {
                answered = millisSince(killed);
                break;
            }
            if (!row.isEmpty()
                    && ((Number) row.getFirst().get("failed_version")).longValue()
                            >= ((Number) row.getFirst().get("version")).longValue()) {
                settle.postPath(
                        "/v1/sessions/" + probe + "/retry"); // the model failed meanwhile: retry, as a client would
            }
            SettleSystem.sleep(Duration.ofMillis(50));
        }
        if (answered < 0 && r.status() == 202) {
            violation(
                    "probe " + probe + " posted while the broker was down was not answered within 90 s of the restart");
        }
        synchronized (brokerRestarts) {
            brokerRestarts.add(new BrokerRestart(killed, down, answering, answered, postMillis));
        }
    }

    /**
     * POSTs started while the broker was away that took over the limit. A POST that overlapped an agent freeze is
     * not judged: the frozen JVM may hold the session's row lock mid-turn, which delays a POST to that session
     * whether Kafka is up or not.
     */
    List<String> slowPostsDuringOutages(List<ChaosWorkload.Post> posts, StallWitness witness) {
        List<String> slow = new ArrayList<>();
        List<long[]> frozen = freezes();
        for (long[] outage : outages()) {
            long from = outage[0];
            posts.stream()
                    .filter(p -> p.startNanos() >= from
                            && p.startNanos() <= outage[1]
                            && p.millis() > OUTAGE_POST_LIMIT.toMillis())
                    .filter(p -> frozen.stream().noneMatch(f -> overlaps(p, f)))
                    .forEach(p ->
                            slow.add("a POST " + (p.startNanos() - from) / 1_000_000 + " ms after the broker kill took "
                                    + p.millis() + " ms to answer (limit " + OUTAGE_POST_LIMIT.toMillis()
                                    + " ms); seen during it: "
                                    + witness.during(p.startNanos(), p.startNanos() + p.nanos())));
        }
        return slow;
    }

    /** The slowest POST in ms, and how many there were, inside or outside broker outages. */
    long[] postLatency(List<ChaosWorkload.Post> posts, boolean duringOutage) {
        List<long[]> outages = outages();
        long max = 0;
        long n = 0;
        for (ChaosWorkload.Post p : posts) {
            if (during(p, outages) == duringOutage) {
                n++;
                max = Math.max(max, p.millis());
            }
        }
        return new long[] {n, max};
    }

    /** The broker outages so far: {kill, answering again} in System.nanoTime. */
    List<long[]> outages() {
        synchronized (brokerRestarts) {
            return brokerRestarts.stream()
                    .map(r -> new long[] {r.killedNanos(), r.killedNanos() + r.answeringMillis() * 1_000_000})
                    .toList();
        }
    }

    /** The agent freezes so far: {SIGSTOP, SIGCONT} in System.nanoTime. */
    List<long[]> freezes() {
        synchronized (freezes) {
            return List.copyOf(freezes);
        }
    }

    /** Whether the POST started inside one of the windows. */
    static boolean during(ChaosWorkload.Post p, List<long[]> windows) {
        return windows.stream().anyMatch(w -> p.startNanos() >= w[0] && p.startNanos() <= w[1]);
    }

    /** Whether the POST's span overlaps the window. */
    static boolean overlaps(ChaosWorkload.Post p, long[] window) {
        return p.startNanos() <= window[1] && p.startNanos() + p.nanos() >= window[0];
    }

    /** The faults of the fault thread whose span overlapped the POST's, as "what (from +ms)" relative to {@code origin}. */
    List<String> faultsDuring(ChaosWorkload.Post p, long origin) {
        synchronized (timeline) {
            return timeline.stream()
                    .filter(f -> overlaps(p, new long[] {f.from(), f.to()}))
                    .map(f -> f.what() + " (" + (f.from() - origin) / 1_000_000 + "-" + (f.to() - origin) / 1_000_000
                            + " ms)")
                    .toList();
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

    /** The agent instances now, one per slot. */
    List<AgentProcess> agents() {
        synchronized (agents) {
            return List.copyOf(agents);
        }
    }

    /** SIGKILL every agent instance (after the run; also when it failed: none may outlive the test). */
    void closeAgents() throws InterruptedException {
        for (AgentProcess a : agents()) {
            a.close();
        }
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        thread.join();
        for (Thread watch : List.copyOf(renewalWatches)) {
            watch.join(); // the checker reads what they noted
        }
        if (brokerThread != null) {
            brokerThread.join(); // a restart in progress finishes: the broker is up when this returns
        }
        model.mode = ChaosModel.Mode.NORMAL;
        settle.model.releaseHangs();
        settle.receiver.answerWith(d -> WebhookReceiver.Answer.status(200));
    }
}
