package dev.settle.e2e;

import com.zaxxer.hikari.HikariDataSource;
import dev.settle.testsupport.KafkaBrokerProcess;
import org.junit.jupiter.api.Test;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.Supplier;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The promises under faults: a generated workload against 3 agent-worker instances (each in its own JVM, so
 * that any of them can be killed and frozen for real; every instance also runs a webhook dispatcher), 2 debounce-worker
 * instances, one Kafka broker (a {@link KafkaBrokerProcess} of this test's own, in its own JVM, so it can be
 * killed and restarted on the same port) and one database, with the users' clients in a JVM of their own
 * ({@link ChaosClients}), while {@link ChaosFaults} injects faults (the broker
 * restarted 2–4 s in, then every 15–45 s); then a complete history is judged by {@link HistoryChecker}, POST
 * latencies included (within {@link HistoryChecker#POST_LIMIT} outside the broker outages).
 *
 * <p>Short run (in the suite): {@code -Dsettle.chaos.sessions=30 -Dsettle.chaos.bursts=5} (the defaults).
 * Long run: {@code mvn -B -pl quickstart -am verify -Dtest=ChaosRunTest -Dsurefire.failIfNoSpecifiedTests=false
 * -Dsettle.chaos.sessions=400 -Dsettle.chaos.bursts=25 -Dsettle.chaos.report=../docs/RELIABILITY-run.md}.
 */
class ChaosRunTest {
    static final Duration TTL = Duration.ofSeconds(3);
    /** Agent-worker instances, each in a JVM of its own: any of them may be killed or frozen. */
    static final int AGENTS = 3;

    @Test
    void promises_hold_under_kills_pauses_lost_connections_lost_events_and_flaky_peers() throws Exception {
        int sessions = Integer.getInteger("settle.chaos.sessions", 30);
        int bursts = Integer.getInteger("settle.chaos.bursts", 5);
        ChaosModel chaosModel = new ChaosModel();
        Map<String, Object> extra = new HashMap<>();
        extra.put("settle.llm.max-attempts", "4");
        extra.put("settle.llm.backoff", "200ms");
        extra.put("settle.llm.timeout", "3s");
        extra.put("settle.webhook.schedule", "0s,200ms,500ms,1s,2s,2s,3s,3s,3s,3s,3s,3s");
        extra.put("settle.webhook.timeout", "2s");
        extra.put("spring.datasource.hikari.maximum-pool-size", "30");
        // all sessions belong to one tenant: the long run's 400 users would exceed its request rate (a policy,
        // tested by LimitsTest), and a 429 stores nothing to judge
        extra.put("settle.limits.rate", "0");
        try (KafkaBrokerProcess broker = KafkaBrokerProcess.start(Path.of("target"));
                SettleSystem settle = new SettleSystem("chaos", false, extra, broker.bootstrapServers())) {
            assertEquals(
                    broker.bootstrapServers(),
                    settle.ingest.getEnvironment().getProperty("spring.kafka.bootstrap-servers"),
                    "the applications run on the broker this test restarts");
            settle.model.respondWith(chaosModel::answer);
            settle.startDebounceWorker();
            Map<String, Object> processProps = new HashMap<>(settle.sharedProperties());
            processProps.put("spring.kafka.consumer.group-id", settle.agentGroup());
            List<AgentProcess> agents = new ArrayList<>();
            ChaosFaults faults = null;
            StallWitness witness = null;
            ChaosClients clients = null;
            try {
                // every agent process, first ones and replacements, logs in as a user of its own
                AtomicInteger agentProcesses = new AtomicInteger();
                Supplier<AgentProcess> newAgent = () -> {
                    try {
                        return new AgentProcess(asUser(processProps, agentProcesses.incrementAndGet()));
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                };
                for (int i = 0; i < AGENTS; i++) {
                    agents.add(newAgent.get());
                }
                for (AgentProcess agent : agents) {
                    await("every agent process joined")
                            .atMost(Duration.ofSeconds(180))
                            .pollInterval(Duration.ofMillis(20))
                            .pollInSameThread()
                            .until(() -> agent.logContains("partitions assigned"));
                }

                clients = ChaosClients.start(
                        settle.baseUrl(), SettleSystem.KEY, sessions, bursts, 42, SettleSystem.WINDOW);
                // the agents now, replacements included, once the faults hold them
                AtomicReference<ChaosFaults> injecting = new AtomicReference<>();
                witness = new StallWitness(
                        (String) settle.sharedProperties().get("spring.datasource.url"),
                        settle.ingest.getBean(HikariDataSource.class),
                        user -> processName(
                                user,
                                injecting.get() == null
                                        ? agents
                                        : injecting.get().agents()));
                Instant started = Instant.now();
                long startedNanos = System.nanoTime();
                ChaosWorkload workload;
                faults = new ChaosFaults(settle, chaosModel, agents, newAgent, TTL, broker);
                injecting.set(faults);
                try {
                    workload = clients.run(settle);
                } finally {
                    faults.close();
                }
                List<String> ids = workload.ids;
                // quiesce: a client retries a session whose turn failed while the model was down
                // the backlog left when the workload stops grows with its size: 4 minutes, or 1 per 1,000 bursts
                await("every session answered and delivered")
                        .atMost(Duration.ofMinutes(Math.max(4, sessions * bursts / 1000)))
                        .pollInterval(Duration.ofMillis(20))
                        .pollInSameThread()
                        .until(() -> {
                            settle.jdbc
                                    .queryForList("""
                                    SELECT external_id FROM chat_session
                                     WHERE version > replied_version AND failed_version >= version""", String.class)
                                    .forEach(s -> settle.postPath("/v1/sessions/" + s + "/retry"));
                            return settle.jdbc.queryForObject("""
                                    SELECT COUNT(*) FROM chat_session WHERE version > replied_version""", Integer.class) == 0
                                    && settle.jdbc.queryForObject("""
                                    SELECT COUNT(*) FROM webhook_delivery WHERE status = 'PENDING'""", Integer.class) == 0;
                        });
                Duration took = Duration.between(started, Instant.now());
                faults.closeAgents();
                witness.close();

                check(settle, sessions, bursts, ids, workload, faults, witness, took, startedNanos);
            } finally {
                if (clients != null) {
                    clients.close();
                }
                if (witness != null) {
                    witness.close();
                }
                if (faults != null) {
                    faults.closeAgents();
                }
                for (AgentProcess agent : agents) {
                    agent.close();
                }
            }
        }
    }

    /** The embedded server skips grant tables: any user name logs in, and names the process to the stall witness. */
    static final boolean NAMED_USERS = !"local".equals(System.getProperty("settle.test.db"));

    /**
     * An agent process's properties, its connections logging in as {@code agent-n} (n counts the agent processes
     * started, replacements included); against a server with grant tables ({@code -Dsettle.test.db=local}) every
     * process logs in as root.
     */
    static Map<String, Object> asUser(Map<String, Object> properties, int n) {
        Map<String, Object> named = new HashMap<>(properties);
        if (NAMED_USERS) {
            named.put("spring.datasource.username", "agent-" + n);
        }
        return named;
    }

    /**
     * A process's name in the stall witness's report, by the user its connections log in as: root is this JVM
     * (ingest-api and the debounce workers), an agent process is named by its slot, as the faults name it; null when
     * users do not name processes.
     */
    static String processName(String user, List<AgentProcess> agents) {
        if (!NAMED_USERS || user == null) {
            return null;
        }
        if (user.equals("root")) {
            return "this JVM: ingest-api, debounce-worker";
        }
        for (int slot = 0; slot < agents.size(); slot++) {
            if (user.equals(agents.get(slot).user())) {
                return "agent " + (slot + 1) + " (" + user + ")";
            }
        }
        return user + " (replaced)";
    }

    static void check(
            SettleSystem settle,
            int sessions,
            int bursts,
            List<String> ids,
            ChaosWorkload workload,
            ChaosFaults faults,
            StallWitness witness,
            Duration took,
            long startedNanos)
            throws Exception {
        HistoryChecker checker = new HistoryChecker(settle.jdbc, SettleSystem.MAX_WAIT, TTL);
        checker.check(ids, workload, settle.receiver.deliveries(), faults.kills);
        checker.checkPostLatency(workload.postTimes, faults, witness, startedNanos);
        String report = report(sessions, bursts, workload, faults, witness, checker, took, startedNanos);
        System.out.println(report);
        String path = System.getProperty("settle.chaos.report");
        if (path != null) {
            Files.writeString(Path.of(path), report);
        }
        List<String> violations = new ArrayList<>(checker.violations);
        violations.addAll(faults.violations);
        violations.addAll(faults.slowPostsDuringOutages(workload.postTimes, witness));
        assertEquals(List.of(), violations, "violations of Settle's promises");
        org.junit.jupiter.api.Assertions.assertTrue(
                faults.counts.containsKey(ChaosFaults.BROKER_RESTARTED),
                "the run restarted the Kafka broker at least once");
        checkerCatchesBrokenHistories(settle, ids, workload, faults);
        checkerCatchesSlowPosts(settle, faults, startedNanos);
    }

    /** The checker is not a rubber stamp: break the history in five ways and it names each session. */
    static void checkerCatchesBrokenHistories(
            SettleSystem settle, List<String> ids, ChaosWorkload workload, ChaosFaults faults) {
        String booker = ids.stream()
                .filter(s -> workload.bookingsPerSession.getOrDefault(s, 0) > 0)
                .findFirst()
                .orElseThrow();
        String other = ids.stream().filter(s -> !s.equals(booker)).findFirst().orElseThrow();
        String third = ids.stream()
                .filter(s -> !s.equals(booker) && !s.equals(other))
                .findFirst()
                .orElseThrow();
        settle.jdbc.update(
                "DELETE FROM ledger_entry WHERE id = ?", settle.jdbc.queryForObject("""
                SELECT MIN(l.id) FROM ledger_entry l JOIN chat_session s ON s.id = l.session_id WHERE s.external_id = ?""", Long.class, booker));
        settle.jdbc.update("""
                UPDATE chat_message m JOIN chat_session s ON s.id = m.session_id
                   SET m.text = CONCAT(m.text, ' (edited)') WHERE s.external_id = ? AND m.role = 'assistant'""", other);
        settle.jdbc.update("UPDATE chat_session SET version = version + 1 WHERE external_id = ?", other);
        settle.jdbc.update("""
                DELETE e FROM session_event e JOIN chat_session s ON s.id = e.session_id
                 WHERE s.external_id = ? AND e.type = 'reply.created'""", booker);
        settle.jdbc.update("""
                DELETE m FROM chat_message m JOIN chat_session s ON s.id = m.session_id
                 WHERE s.external_id = ? AND m.role = 'assistant'""", third);
        HistoryChecker again = new HistoryChecker(settle.jdbc, SettleSystem.MAX_WAIT, TTL);
        again.check(List.of(booker, other, third), workload, settle.receiver.deliveries(), faults.kills);
        String all = String.join("\n", again.violations);
        org.junit.jupiter.api.Assertions.assertTrue(all.contains(booker + ": ") && all.contains("ledger rows"), all);
        org.junit.jupiter.api.Assertions.assertTrue(
                all.contains(other + ": ") && all.contains("differs from its persisted stream"), all);
        org.junit.jupiter.api.Assertions.assertTrue(all.contains("versions"), all);
        org.junit.jupiter.api.Assertions.assertTrue(
                all.contains(booker + ": turn ") && all.contains("'s stream has 0 ending events"), all);
        org.junit.jupiter.api.Assertions.assertTrue(
                all.contains(third + ": webhook of reply ") && all.contains("that reply was never committed"), all);
    }

    /**
     * Nor for latency: a POST over the limit outside the outages is named with its session and time, one as slow
     * inside an outage is left to the outage's own check.
     */
    static void checkerCatchesSlowPosts(SettleSystem settle, ChaosFaults faults, long startedNanos) {
        long slow = HistoryChecker.POST_LIMIT.toNanos() + 1_000_000;
        long[] outage = faults.outages().getFirst();
        HistoryChecker latency = new HistoryChecker(settle.jdbc, SettleSystem.MAX_WAIT, TTL);
        latency.checkPostLatency(
                List.of(
                        new ChaosWorkload.Post(
                                "slow-outside",
                                202,
                                startedNanos - Duration.ofMinutes(1).toNanos(),
                                slow),
                        new ChaosWorkload.Post("slow-inside", 202, outage[0], slow)),
                faults,
                null,
                startedNanos);
        assertEquals(1, latency.violations.size(), String.join("\n", latency.violations));
        String v = latency.violations.getFirst();
        org.junit.jupiter.api.Assertions.assertTrue(
                v.startsWith("slow-outside: a POST started -60000 ms into the run")
                        && v.contains("answered 202 after " + slow / 1_000_000 + " ms (limit "
                                + HistoryChecker.POST_LIMIT.toMillis() + " ms)"),
                v);
    }

    static String report(
            int sessions,
            int bursts,
            ChaosWorkload w,
            ChaosFaults faults,
            StallWitness witness,
            HistoryChecker checker,
            Duration took,
            long origin) {
        StringBuilder sb = new StringBuilder();
        sb.append("| figure | value |\n|---|---|\n");
        sb.append("| sessions | ").append(sessions).append(" |\n");
        sb.append("| bursts | ").append(w.bursts.get()).append(" |\n");
        sb.append("| messages accepted | ").append(w.accepted.size()).append(" |\n");
        sb.append("| double-clicks / multi-device pairs / fast typists | ")
                .append(w.doubleClicks.get())
                .append(" / ")
                .append(w.multiDevice.get())
                .append(" / ")
                .append(w.fastTypists.get())
                .append(" |\n");
        sb.append("| 503 answers retried by the client (database unavailable) | ")
                .append(w.serverRetries.get())
                .append(" |\n");
        sb.append("| 429 answers waited out by the client (100 unanswered in the session) | ")
                .append(w.unansweredRefusals.get())
                .append(" |\n");
        sb.append("| failed turns answered again by the client while its messages were refused | ")
                .append(w.failedTurnRetries.get())
                .append(" |\n");
        sb.append("| bookings (side-effecting tool calls intended) | ")
                .append(w.bookingsPerSession.values().stream()
                        .mapToInt(Integer::intValue)
                        .sum())
                .append(" |\n");
        new TreeMap<>(faults.counts)
                .forEach((k, v) -> sb.append("| fault: ")
                        .append(k)
                        .append(" | ")
                        .append(v.get())
                        .append(" |\n"));
        sb.append("| takeovers after a kill measured | ")
                .append(checker.takeoverMillis.size())
                .append(" |\n");
        sb.append("| leases held at a kill, renewed after it, later abandoned (a live holder's; not judged) | ")
                .append(checker.abandonedByLiveHolders)
                .append(" |\n");
        sb.append("| takeover p50 / p99 (ms, lease TTL ")
                .append(TTL.toMillis())
                .append(") | ")
                .append(HistoryChecker.percentile(checker.takeoverMillis, 0.5))
                .append(" / ")
                .append(HistoryChecker.percentile(checker.takeoverMillis, 0.99))
                .append(" |\n");
        sb.append("| takeover split: kill → lease expiry p50 / p99; expiry → next turn p50 / p99 (ms) | ")
                .append(HistoryChecker.percentile(checker.untilExpiryMillis, 0.5))
                .append(" / ")
                .append(HistoryChecker.percentile(checker.untilExpiryMillis, 0.99))
                .append("; ")
                .append(HistoryChecker.percentile(checker.afterExpiryMillis, 0.5))
                .append(" / ")
                .append(HistoryChecker.percentile(checker.afterExpiryMillis, 0.99))
                .append(" |\n");
        synchronized (faults.brokerRestarts) {
            for (ChaosFaults.BrokerRestart r : faults.brokerRestarts) {
                sb.append(
                                "| broker restart: kept down / answering again / probe answered (ms after the kill); probe 202 (ms) | ")
                        .append(r.downMillis())
                        .append(" / ")
                        .append(r.answeringMillis())
                        .append(" / ")
                        .append(r.probeAnsweredMillis())
                        .append("; ")
                        .append(r.probePostMillis())
                        .append(" |\n");
            }
        }
        long[] inside = faults.postLatency(w.postTimes, true);
        long[] outside = faults.postLatency(w.postTimes, false);
        sb.append("| POSTs while the broker was away: count / slowest answer (ms) | ")
                .append(inside[0])
                .append(" / ")
                .append(inside[1])
                .append(" |\n");
        sb.append("| other POSTs: count / slowest answer (ms) | ")
                .append(outside[0])
                .append(" / ")
                .append(outside[1])
                .append(" |\n");
        sb.append("| POSTs judged outside outages and freezes: count / slowest answer (ms, limit ")
                .append(HistoryChecker.POST_LIMIT.toMillis())
                .append(") | ")
                .append(checker.postsJudged)
                .append(" / ")
                .append(checker.slowestJudgedPost)
                .append(" |\n");
        List<String> slowDuringOutages = faults.slowPostsDuringOutages(w.postTimes, witness);
        sb.append("| over the bounds: judged POSTs over ")
                .append(HistoryChecker.POST_LIMIT.toMillis())
                .append(" ms / POSTs during outages over ")
                .append(ChaosFaults.OUTAGE_POST_LIMIT.toMillis())
                .append(" ms / takeovers over TTL + 2 s | ")
                .append(checker.slowJudgedPosts)
                .append(String.format(
                        " (%.1f %%)",
                        checker.postsJudged == 0 ? 0.0 : 100.0 * checker.slowJudgedPosts / checker.postsJudged))
                .append(" / ")
                .append(slowDuringOutages.size())
                .append(" / ")
                .append(checker.slowTakeovers)
                .append(" of ")
                .append(checker.takeoverMillis.size())
                .append(" |\n");
        sb.append("| agent instances hit, kills / freezes per instance | ");
        for (int i = 0; i < faults.hits.length; i++) {
            sb.append(i == 0 ? "" : ", ")
                    .append(i + 1)
                    .append(": ")
                    .append(faults.hits[i][0])
                    .append(" / ")
                    .append(faults.hits[i][1]);
        }
        sb.append(" |\n");
        sb.append(witness.rows(faults, origin));
        List<String> slow = slowDuringOutages;
        sb.append("| violations | ")
                .append(checker.violations.size() + faults.violations.size() + slow.size())
                .append(" |\n");
        sb.append("| wall time | ").append(took.toSeconds()).append(" s |\n");
        checker.violations.stream().limit(50).forEach(v -> sb.append("\n- ").append(v));
        faults.violations.forEach(v -> sb.append("\n- ").append(v));
        slow.stream().limit(20).forEach(v -> sb.append("\n- ").append(v));
        sb.append(witness.longestHolders(5));
        return sb.toString();
    }
}
