package dev.settle.ingest;

import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import java.lang.management.ManagementFactory;
import java.net.http.HttpResponse;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What group commit saves: SQL statements and commits per accepted message, counted by the database server
 * ({@code SHOW GLOBAL STATUS} Questions and Com_commit; the embedded MariaDB serves only this test's application while
 * it runs), and this JVM's CPU per accepted message (the application and its HTTP clients), with one client posting
 * alone and with {@value #CLIENTS} clients posting at once. Prints the figures; asserts that a lone client costs the
 * same with group commit on and that concurrent clients cost fewer statements and commits with it.
 */
class GroupCommitCostTest {
    static final int CLIENTS = 16;
    static final int PER_CLIENT = 40;
    static final int ALONE = 200;

    record Cost(double statements, double commits, double cpuMs, double wallMs, double p50Ms, double p99Ms) {
        @Override
        public String toString() {
            return String.format(
                    "%.2f statements, %.3f commits, %.2f ms JVM CPU per accept; POST p50 %.1f ms, p99 %.1f ms (%.0f ms wall)",
                    statements, commits, cpuMs, p50Ms, p99Ms, wallMs);
        }
    }

    @Test
    void group_commit_costs_the_same_alone_and_fewer_statements_and_commits_together() throws Exception {
        Cost offAlone;
        Cost offTogether;
        Cost onAlone;
        Cost onTogether;
        try (IngestApp app = new IngestApp("cost_off", props(false))) {
            measure(app, false); // warm-up
            offAlone = measure(app, false);
            measure(app, true);
            offTogether = measure(app, true);
        }
        try (IngestApp app = new IngestApp("cost_on", props(true))) {
            measure(app, false);
            onAlone = measure(app, false);
            measure(app, true);
            onTogether = measure(app, true);
        }
        System.out.printf(
                "GroupCommitCostTest (load average %.2f on %d cores)%n"
                        + "  off, 1 client:  %s%n  on,  1 client:  %s%n"
                        + "  off, %d clients: %s%n  on,  %d clients: %s%n",
                ManagementFactory.getOperatingSystemMXBean().getSystemLoadAverage(),
                Runtime.getRuntime().availableProcessors(),
                offAlone,
                onAlone,
                CLIENTS,
                offTogether,
                CLIENTS,
                onTogether);
        assertEquals(offAlone.statements(), onAlone.statements(), 0.1, "alone, the same statements");
        assertTrue(onTogether.commits() < offTogether.commits() * 0.8, onTogether + " vs " + offTogether);
        assertTrue(onTogether.statements() < offTogether.statements() * 0.8, onTogether + " vs " + offTogether);
    }

    static Map<String, Object> props(boolean groupCommit) {
        return Map.of(
                "settle.limits.rate", "0",
                "settle.limits.max-unanswered", "100000",
                "settle.ingest.group-commit", Boolean.toString(groupCommit));
    }

    static long status(JdbcTemplate jdbc, String name) {
        return jdbc.queryForObject(
                "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = ?",
                Long.class,
                name);
    }

    /** {@value #ALONE} posts one after another, or {@value #CLIENTS} clients × {@value #PER_CLIENT} posts at once. */
    static Cost measure(IngestApp app, boolean together) throws Exception {
        // half of the clients share 4 sessions, the others post to a session each
        List<String> sessions = new ArrayList<>();
        for (int i = 0; i < CLIENTS; i++) {
            sessions.add(i < CLIENTS / 2 ? "cost-shared-" + (i % 4) : "cost-" + UUID.randomUUID());
        }
        com.sun.management.OperatingSystemMXBean os =
                (com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean();
        long questions = status(app.jdbc, "QUESTIONS");
        long commits = status(app.jdbc, "COM_COMMIT");
        long cpu = os.getProcessCpuTime();
        long start = System.nanoTime();
        int accepted;
        List<Long> latencies = java.util.Collections.synchronizedList(new ArrayList<>());
        if (!together) {
            String s = "cost-alone-" + UUID.randomUUID();
            for (int i = 0; i < ALONE; i++) {
                long sent = System.nanoTime();
                HttpResponse<String> r = app.post(
                        "/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"alone " + i + "\"}");
                latencies.add(System.nanoTime() - sent);
                assertEquals(202, r.statusCode(), r.body());
            }
            accepted = ALONE;
        } else {
            CyclicBarrier barrier = new CyclicBarrier(CLIENTS);
            List<Future<?>> clients = new ArrayList<>();
            try (ExecutorService pool = Executors.newFixedThreadPool(CLIENTS)) {
                for (int c = 0; c < CLIENTS; c++) {
                    String s = sessions.get(c);
                    clients.add(pool.submit(() -> {
                        barrier.await();
                        for (int i = 0; i < PER_CLIENT; i++) {
                            long sent = System.nanoTime();
                            HttpResponse<String> r = app.post(
                                    "/v1/sessions/" + s + "/messages",
                                    "application/json",
                                    "{\"text\":\"together " + i + "\"}");
                            latencies.add(System.nanoTime() - sent);
                            assertEquals(202, r.statusCode(), r.body());
                        }
                        return null;
                    }));
                }
            }
            for (Future<?> f : clients) {
                f.get();
            }
            accepted = CLIENTS * PER_CLIENT;
        }
        double wallMs = (System.nanoTime() - start) / 1e6;
        double cpuMs = (os.getProcessCpuTime() - cpu) / 1e6;
        // the two status queries after the first are counted; nothing else talks to the server meanwhile
        long q = status(app.jdbc, "QUESTIONS") - questions - 2;
        long c = status(app.jdbc, "COM_COMMIT") - commits;
        List<Long> sorted = latencies.stream().sorted().toList();
        return new Cost(
                (double) q / accepted,
                (double) c / accepted,
                cpuMs / accepted,
                wallMs,
                sorted.get(sorted.size() / 2) / 1e6,
                sorted.get((int) (sorted.size() * 0.99)) / 1e6);
    }
}
