package dev.settle.e2e;

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

import static dev.settle.e2e.SettleSystem.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The promises under faults: a generated workload against 3 agent-worker instances (one in its own JVM, so
 * it can be killed and frozen for real; every instance also runs a webhook dispatcher), 2 debounce-worker
 * instances, one Kafka broker (a {@link KafkaBrokerProcess} of this test's own, in its own JVM, so it can be
 * killed and restarted on the same port) and one database, while {@link ChaosFaults} injects faults (the broker
 * restarted 2–4 s in, then every 15–45 s); then a complete history is judged by {@link HistoryChecker}.
 *
 * <p>Short run (in the suite): {@code -Dsettle.chaos.sessions=30 -Dsettle.chaos.bursts=5} (the defaults).
 * Long run: {@code mvn -B -pl quickstart -am verify -Dtest=ChaosRunTest -Dsurefire.failIfNoSpecifiedTests=false
 * -Dsettle.chaos.sessions=400 -Dsettle.chaos.bursts=25 -Dsettle.chaos.report=../docs/RELIABILITY-run.md}.
 */
class ChaosRunTest {
    static final Duration TTL = Duration.ofSeconds(3);

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
             SettleSystem settle = new SettleSystem("chaos", true, extra, broker.bootstrapServers())) {
            assertEquals(broker.bootstrapServers(), settle.ingest.getEnvironment().getProperty("spring.kafka.bootstrap-servers"),
                    "the applications run on the broker this test restarts");
            settle.model.respondWith(chaosModel::answer);
            settle.startAgent();
            settle.startDebounceWorker();
            Map<String, Object> processProps = new HashMap<>(settle.sharedProperties());
            processProps.put("spring.kafka.consumer.group-id", settle.agentGroup());
            AgentProcess first = new AgentProcess(processProps);
            await("the agent process joined", Duration.ofSeconds(90), () -> first.logContains("partitions assigned"));

            ChaosWorkload workload = new ChaosWorkload(settle, SettleSystem.WINDOW);
            Instant started = Instant.now();
            List<String> ids;
            ChaosFaults faults = new ChaosFaults(settle, chaosModel, first, () -> {
                try {
                    return new AgentProcess(processProps);
                } catch (Exception e) {
                    throw new IllegalStateException(e);
                }
            }, TTL, broker);
            try {
                ids = workload.run(sessions, bursts, 42);
            } finally {
                faults.close();
            }
            // quiesce: a client retries a session whose turn failed while the model was down
            // the backlog left when the workload stops grows with its size: 4 minutes, or 1 per 1,000 bursts
            await("every session answered and delivered", Duration.ofMinutes(Math.max(4, sessions * bursts / 1000)), () -> {
                settle.jdbc.queryForList("""
                        SELECT external_id FROM chat_session
                         WHERE version > replied_version AND failed_version >= version""", String.class)
                        .forEach(s -> settle.postPath("/v1/sessions/" + s + "/retry"));
                return settle.jdbc.queryForObject("""
                        SELECT COUNT(*) FROM chat_session WHERE version > replied_version""", Integer.class) == 0
                        && settle.jdbc.queryForObject("""
                        SELECT COUNT(*) FROM webhook_delivery WHERE status = 'PENDING'""", Integer.class) == 0;
            });
            Duration took = Duration.between(started, Instant.now());
            faults.agent().close();

            HistoryChecker checker = new HistoryChecker(settle.jdbc, SettleSystem.MAX_WAIT, TTL);
            checker.check(ids, workload, settle.receiver.deliveries(), faults.kills);
            String report = report(sessions, bursts, workload, faults, checker, took);
            System.out.println(report);
            String path = System.getProperty("settle.chaos.report");
            if (path != null) {
                Files.writeString(Path.of(path), report);
            }
            List<String> violations = new ArrayList<>(checker.violations);
            violations.addAll(faults.violations);
            violations.addAll(faults.slowPostsDuringOutages(workload.postTimes));
            assertEquals(List.of(), violations, "violations of Settle's promises");
            org.junit.jupiter.api.Assertions.assertTrue(faults.counts.containsKey(ChaosFaults.BROKER_RESTARTED),
                    "the run restarted the Kafka broker at least once");
            checkerCatchesBrokenHistories(settle, ids, workload, faults);
        }
    }

    /** The checker is not a rubber stamp: break the history in three ways and it names each session. */
    static void checkerCatchesBrokenHistories(SettleSystem settle, List<String> ids, ChaosWorkload workload,
                                              ChaosFaults faults) {
        String booker = ids.stream().filter(s -> workload.bookingsPerSession.getOrDefault(s, 0) > 0).findFirst().orElseThrow();
        String other = ids.stream().filter(s -> !s.equals(booker)).findFirst().orElseThrow();
        settle.jdbc.update("DELETE FROM ledger_entry WHERE id = ?", settle.jdbc.queryForObject("""
                SELECT MIN(l.id) FROM ledger_entry l JOIN chat_session s ON s.id = l.session_id WHERE s.external_id = ?""",
                Long.class, booker));
        settle.jdbc.update("""
                UPDATE chat_message m JOIN chat_session s ON s.id = m.session_id
                   SET m.text = CONCAT(m.text, ' (edited)') WHERE s.external_id = ? AND m.role = 'assistant'""", other);
        settle.jdbc.update("UPDATE chat_session SET version = version + 1 WHERE external_id = ?", other);
        HistoryChecker again = new HistoryChecker(settle.jdbc, SettleSystem.MAX_WAIT, TTL);
        again.check(List.of(booker, other), workload, settle.receiver.deliveries(), faults.kills);
        String all = String.join("\n", again.violations);
        org.junit.jupiter.api.Assertions.assertTrue(all.contains(booker + ": ") && all.contains("ledger rows"), all);
        org.junit.jupiter.api.Assertions.assertTrue(all.contains(other + ": ") && all.contains("differs from its persisted stream"), all);
        org.junit.jupiter.api.Assertions.assertTrue(all.contains("versions"), all);
    }

    static String report(int sessions, int bursts, ChaosWorkload w, ChaosFaults faults, HistoryChecker checker,
                         Duration took) {
        StringBuilder sb = new StringBuilder();
        sb.append("| figure | value |\n|---|---|\n");
        sb.append("| sessions | ").append(sessions).append(" |\n");
        sb.append("| bursts | ").append(w.bursts.get()).append(" |\n");
        sb.append("| messages accepted | ").append(w.accepted.size()).append(" |\n");
        sb.append("| double-clicks / multi-device pairs / fast typists | ").append(w.doubleClicks.get()).append(" / ")
                .append(w.multiDevice.get()).append(" / ").append(w.fastTypists.get()).append(" |\n");
        sb.append("| 503 answers retried by the client (database unavailable) | ").append(w.serverRetries.get()).append(" |\n");
        sb.append("| 429 answers waited out by the client (100 unanswered in the session) | ").append(w.unansweredRefusals.get()).append(" |\n");
        sb.append("| bookings (side-effecting tool calls intended) | ")
                .append(w.bookingsPerSession.values().stream().mapToInt(Integer::intValue).sum()).append(" |\n");
        new TreeMap<>(faults.counts).forEach((k, v) -> sb.append("| fault: ").append(k).append(" | ").append(v.get()).append(" |\n"));
        sb.append("| takeovers after a kill measured | ").append(checker.takeoverMillis.size()).append(" |\n");
        sb.append("| takeover p50 / p99 (ms, lease TTL ").append(TTL.toMillis()).append(") | ")
                .append(HistoryChecker.percentile(checker.takeoverMillis, 0.5)).append(" / ")
                .append(HistoryChecker.percentile(checker.takeoverMillis, 0.99)).append(" |\n");
        synchronized (faults.brokerRestarts) {
            for (ChaosFaults.BrokerRestart r : faults.brokerRestarts) {
                sb.append("| broker restart: kept down / answering again / probe answered (ms after the kill); probe 202 (ms) | ")
                        .append(r.downMillis()).append(" / ").append(r.answeringMillis()).append(" / ")
                        .append(r.probeAnsweredMillis()).append("; ").append(r.probePostMillis()).append(" |\n");
            }
        }
        long[] inside = faults.postLatency(w.postTimes, true);
        long[] outside = faults.postLatency(w.postTimes, false);
        sb.append("| POSTs while the broker was away: count / slowest answer (ms) | ").append(inside[0]).append(" / ")
                .append(inside[1]).append(" |\n");
        sb.append("| other POSTs: count / slowest answer (ms) | ").append(outside[0]).append(" / ").append(outside[1]).append(" |\n");
        List<String> slow = faults.slowPostsDuringOutages(w.postTimes);
        sb.append("| violations | ").append(checker.violations.size() + faults.violations.size() + slow.size()).append(" |\n");
        sb.append("| wall time | ").append(took.toSeconds()).append(" s |\n");
        checker.violations.stream().limit(50).forEach(v -> sb.append("\n- ").append(v));
        faults.violations.forEach(v -> sb.append("\n- ").append(v));
        slow.stream().limit(20).forEach(v -> sb.append("\n- ").append(v));
        return sb.toString();
    }
}
