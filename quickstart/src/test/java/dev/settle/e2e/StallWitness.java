package dev.settle.e2e;

import com.sun.management.HotSpotDiagnosticMXBean;
import com.zaxxer.hikari.HikariDataSource;
import com.zaxxer.hikari.HikariPoolMXBean;

import java.io.IOException;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;

/**
 * Watches, every {@value #EVERY_MILLIS} ms while the chaos workload runs, what can hold a POST up: InnoDB
 * transactions of this run's database that keep another one waiting for a lock (which connection, which lock, from
 * when to when it was seen, what it ran and what waited for it), the server's answer to a plain {@code DO 1},
 * ingest-api's connection pool (requests waiting for a connection) and this JVM, which runs ingest-api (its collector
 * pauses, and looks that started late because it stalled). A slow POST is then reported with what was seen during it
 * ({@link #during}), so the cause of a stall is read from the run, not guessed.
 *
 * <p>Its connection names no database, so the chaos run's connection kills (which pick connections of the run's
 * database) leave it alone. The lock views are MariaDB's ({@code information_schema.INNODB_LOCK_WAITS}); the chaos
 * run runs on MariaDB only. A lock holder "seen" over a span may be an artefact of one slow look (a look at the lock
 * views can take seconds while a client of the server is frozen): the report names slow looks beside the holders.
 *
 * <p>With {@code -Dsettle.chaos.dump-after-ms=N} a holder of a {@code chat_session} row seen for N ms gets the
 * threads of this JVM and of every child JVM dumped to {@code target/} ({@value #MAX_DUMPS} times a run at most).
 * Off by default: {@code jcmd Thread.dump_to_file} once crashed an agent JVM here (a SIGSEGV in
 * {@code Continuation::is_continuation_entry_frame}, JDK 25.0.3).
 */
final class StallWitness implements AutoCloseable {
    static final long EVERY_MILLIS = 150;
    /**
     * The least pause between two looks: InnoDB refreshes its lock views ({@code INNODB_TRX} and the views built on
     * it) only when nobody read them for 100 ms, so looks closer together than that would read the same stale copy
     * forever.
     */
    static final long IDLE_MILLIS = 120;
    /** A holder of a {@code chat_session} row seen this long gets the threads dumped; 0: never (the default). */
    static final long DUMP_AFTER_MILLIS = Long.getLong("settle.chaos.dump-after-ms", 0);

    static final int MAX_DUMPS = 3;
    /** A look that takes this long, or a pause between looks that ends this late (this JVM stalled), is recorded. */
    static final long LATE_MILLIS = 500;

    /** Each lock wait now: the waiting statement, and the transaction it waits for with its connection. */
    static final String LOCK_WAITS = """
            SELECT r.trx_mysql_thread_id AS waiter, LEFT(r.trx_query, 120) AS waiter_query,
                   r.trx_id AS waiter_trx, r.trx_started AS waiter_started,
                   rl.lock_table AS wanted_table, rl.lock_index AS wanted_index, rl.lock_mode AS wanted_mode,
                   rl.lock_data AS wanted_row,
                   b.trx_id AS blocker_trx, b.trx_mysql_thread_id AS blocker, b.trx_started AS blocker_started,
                   LEFT(b.trx_query, 160) AS blocker_query, b.trx_state AS blocker_state,
                   bp.COMMAND AS blocker_command, bp.USER AS blocker_user,
                   l.lock_table, l.lock_index, l.lock_mode, l.lock_data
              FROM information_schema.INNODB_LOCK_WAITS w
              JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id
              JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id
              JOIN information_schema.PROCESSLIST rp ON rp.ID = r.trx_mysql_thread_id
              LEFT JOIN information_schema.PROCESSLIST bp ON bp.ID = b.trx_mysql_thread_id
              LEFT JOIN information_schema.INNODB_LOCKS l ON l.lock_id = w.blocking_lock_id
              LEFT JOIN information_schema.INNODB_LOCKS rl ON rl.lock_id = w.requested_lock_id
             WHERE rp.DB = ?""";

    /**
     * A transaction seen holding a lock another waited for: from its first to its last sighting. A transaction is its
     * id, connection and start: MariaDB shows id 0 for every transaction that has locked but not yet written.
     */
    static final class Holder {
        final String trx;
        final String connection;
        final String lock;
        final long firstSeen;
        long lastSeen;
        int looks;
        /** The keys of the rows it held that others waited for (the first few). */
        final Set<String> rows = new LinkedHashSet<>();

        final Set<String> running = new LinkedHashSet<>();
        /** What it was itself seen waiting for, while others waited for it (the first few). */
        final Set<String> waitingFor = new LinkedHashSet<>();

        final Set<String> waiters = new LinkedHashSet<>();
        boolean dumped;
        /** The process whose connection it is, by the user the connection logged in as ({@link #processName}). */
        String owner;

        Holder(String trx, String connection, String lock, long seen) {
            this.trx = trx;
            this.connection = connection;
            this.lock = lock;
            this.firstSeen = seen;
            this.lastSeen = seen;
        }

        long heldMillis() {
            return (lastSeen - firstSeen) / 1_000_000 + EVERY_MILLIS;
        }

        @Override
        public String toString() {
            return "trx " + trx + " of connection " + connection + (owner == null ? "" : " in " + owner) + " held "
                    + lock + " (rows " + String.join(", ", rows)
                    + ") for ≥ " + heldMillis()
                    + " ms (seen by " + looks + " looks) while "
                    + String.join(" / ", running)
                    + (waitingFor.isEmpty() ? "" : ", itself waiting for " + String.join(" / ", waitingFor))
                    + "; waiting: " + String.join(" / ", waiters);
        }
    }

    /** One look at the ingest pool and the collector: when, waiting requests, total GC pause so far (ms). */
    private record Tick(long at, int awaitingConnection, long gcMillis) {}

    private final String url;
    private final String database;
    private final Function<String, String> processName;
    private final HikariPoolMXBean ingestPool;
    private final Map<String, Holder> holders = new HashMap<>();
    private final List<Tick> ticks = new ArrayList<>();
    private final List<String> dumps = new ArrayList<>();
    /** Pauses that ended {@value #LATE_MILLIS} ms or more late (this JVM stalled): {when it should have woken, woke}. */
    private final List<long[]> late = new ArrayList<>();
    /** Looks that took {@value #LATE_MILLIS} ms or more: {start, end}. */
    private final List<long[]> slowLooks = new ArrayList<>();
    /** Round trips of {@code DO 1} (the server alone, no lock view) that took {@value #LATE_MILLIS} ms or more. */
    private final List<long[]> slowPings = new ArrayList<>();

    private int dumped;
    private final Thread thread;
    private volatile boolean running = true;
    private Connection connection;
    private volatile int failedLooks;
    private volatile String firstFailure;

    /**
     * @param databaseUrl the run's JDBC URL (its database is watched; the witness connects without it)
     * @param processName the name in the report of the process whose connections log in as a given user ("agent 2")
     */
    StallWitness(String databaseUrl, HikariDataSource ingestPool, Function<String, String> processName) {
        int slash = databaseUrl.indexOf('/', "jdbc:mysql://".length());
        int query = databaseUrl.indexOf('?', slash);
        this.database = databaseUrl.substring(slash + 1, query < 0 ? databaseUrl.length() : query);
        this.url = databaseUrl.substring(0, slash + 1) + (query < 0 ? "" : databaseUrl.substring(query));
        this.processName = processName;
        this.ingestPool = ingestPool.getHikariPoolMXBean();
        this.thread = Thread.ofPlatform().name("stall-witness").daemon(true).start(this::watch);
    }

    private void watch() {
        while (running) {
            long started = System.nanoTime();
            look(started);
            long took = System.nanoTime() - started;
            if (took > LATE_MILLIS * 1_000_000) {
                synchronized (this) {
                    slowLooks.add(new long[] {started, started + took});
                }
            }
            long pause = Math.max(IDLE_MILLIS * 1_000_000, EVERY_MILLIS * 1_000_000 - took);
            long asleep = System.nanoTime();
            try {
                Thread.sleep(Duration.ofNanos(pause));
            } catch (InterruptedException e) {
                return;
            }
            long woke = System.nanoTime();
            if (woke - asleep - pause > LATE_MILLIS * 1_000_000) { // this JVM did not run the thread on time
                synchronized (this) {
                    late.add(new long[] {asleep + pause, woke});
                }
            }
        }
    }

    private void look(long now) {
        long gc = ManagementFactory.getGarbageCollectorMXBeans().stream()
                .mapToLong(GarbageCollectorMXBean::getCollectionTime)
                .sum();
        synchronized (this) {
            ticks.add(new Tick(now, ingestPool.getThreadsAwaitingConnection(), gc));
        }
        try {
            if (connection == null || connection.isClosed()) {
                connection = DriverManager.getConnection(url, "root", "");
            }
            long pingStarted = System.nanoTime();
            try (java.sql.Statement ping = connection.createStatement()) {
                ping.execute("DO 1");
            }
            long pinged = System.nanoTime();
            if (pinged - pingStarted > LATE_MILLIS * 1_000_000) {
                synchronized (this) {
                    slowPings.add(new long[] {pingStarted, pinged});
                }
            }
            try (PreparedStatement s = connection.prepareStatement(LOCK_WAITS)) {
                s.setString(1, database);
                Map<String, String> waits = new HashMap<>();
                try (ResultSet rs = s.executeQuery()) {
                    while (rs.next()) {
                        seen(now, rs);
                        waits.put(
                                transaction(rs, "waiter_trx", "waiter", "waiter_started"),
                                lock(rs, "wanted_") + " (rows " + rs.getString("wanted_row") + ") held by trx "
                                        + rs.getString("blocker_trx") + " of connection " + rs.getString("blocker"));
                    }
                }
                synchronized (this) {
                    waits.forEach((key, wanted) -> {
                        Holder h = holders.get(key);
                        if (h != null && h.lastSeen == now && h.waitingFor.size() < 3) {
                            h.waitingFor.add(wanted);
                        }
                    });
                }
            }
        } catch (SQLException e) {
            if (failedLooks++ == 0) {
                firstFailure = e.toString();
            }
            try {
                if (connection != null) {
                    connection.close();
                }
            } catch (SQLException ignored) {
                // reconnects on the next look
            }
            connection = null;
        }
    }

    /** A transaction's identity in {@link #holders}: its id, connection and start (see {@link Holder}). */
    private static String transaction(ResultSet rs, String trx, String connection, String started) throws SQLException {
        return rs.getString(trx) + "/" + rs.getString(connection) + "/" + rs.getString(started);
    }

    /** "mode lock on table.index" from the columns named {@code prefix}mode, {@code prefix}table, {@code prefix}index. */
    private static String lock(ResultSet rs, String prefix) throws SQLException {
        return rs.getString(prefix + "mode") + " lock on " + rs.getString(prefix + "table") + "."
                + rs.getString(prefix + "index");
    }

    private void seen(long now, ResultSet rs) throws SQLException {
        String trx = rs.getString("blocker_trx");
        String blockerQuery = rs.getString("blocker_query");
        String doing = blockerQuery != null
                ? blockerQuery.replaceAll("\\s+", " ")
                : "idle in transaction (" + rs.getString("blocker_command") + ")";
        String waiter = String.valueOf(rs.getString("waiter_query")).replaceAll("\\s+", " ");
        String lock = lock(rs, "lock_");
        String connection = rs.getString("blocker");
        String key = transaction(rs, "blocker_trx", "blocker", "blocker_started");
        String row = rs.getString("lock_data");
        boolean dump;
        synchronized (this) {
            Holder h = holders.computeIfAbsent(key, k -> new Holder(trx, connection, lock, now));
            if (h.owner == null) {
                h.owner = processName.apply(rs.getString("blocker_user"));
            }
            if (h.lastSeen != now || h.looks == 0) {
                h.looks++;
            }
            h.lastSeen = now;
            dump = DUMP_AFTER_MILLIS > 0
                    && h.heldMillis() >= DUMP_AFTER_MILLIS
                    && lock.contains("`chat_session`")
                    && !h.dumped
                    && dumped < MAX_DUMPS;
            if (dump) {
                dumped++;
            }
            h.dumped |= dump;
            if (h.rows.size() < 4 && row != null) {
                h.rows.add(row);
            }
            if (h.running.size() < 4) {
                h.running.add(doing);
            }
            if (h.waiters.size() < 4) {
                h.waiters.add(waiter);
            }
        }
        if (dump) {
            dumpThreads(trx);
        }
    }

    /**
     * The threads of this JVM and of every child JVM (the agent workers, the broker), virtual ones included, to files
     * named in the report: who holds the transaction open.
     */
    private void dumpThreads(String trx) {
        List<String> files = new ArrayList<>();
        Path self = dumpFile(ProcessHandle.current().pid(), trx);
        try {
            Files.deleteIfExists(self);
            ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class)
                    .dumpThreads(self.toString(), HotSpotDiagnosticMXBean.ThreadDumpFormat.TEXT_PLAIN);
            files.add(self.toString());
        } catch (IOException | RuntimeException e) {
            // a report without this dump
        }
        Path jcmd =
                Path.of(ProcessHandle.current().info().command().orElse("java")).resolveSibling("jcmd");
        ProcessHandle.current()
                .descendants()
                .filter(p -> p.info().command().map(c -> c.endsWith("java")).orElse(false))
                .forEach(p -> {
                    Path file = dumpFile(p.pid(), trx);
                    try {
                        Process dump = new ProcessBuilder(
                                        jcmd.toString(), Long.toString(p.pid()), "Thread.dump_to_file", file.toString())
                                .redirectErrorStream(true)
                                .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                                .start();
                        if (dump.waitFor(10, java.util.concurrent.TimeUnit.SECONDS) && Files.exists(file)) {
                            files.add(file.toString());
                        }
                    } catch (IOException e) {
                        // a report without this dump
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                });
        synchronized (this) {
            dumps.addAll(files);
        }
    }

    private static Path dumpFile(long pid, String trx) {
        return Path.of("target", "stall-threads-trx-" + trx + "-pid-" + pid + ".txt")
                .toAbsolutePath();
    }

    /** What was seen while the span [from, to] (System.nanoTime) ran; empty when nothing. */
    synchronized String during(long from, long to) {
        List<String> seen = new ArrayList<>();
        holders.values().stream()
                .filter(h -> h.firstSeen <= to && h.lastSeen >= from)
                .sorted(Comparator.comparingLong((Holder h) -> h.firstSeen))
                .limit(3)
                .forEach(h -> seen.add(h.toString()));
        seen.addAll(processDuring(from, to));
        return seen.isEmpty() ? "no lock wait, pool wait or collector pause seen" : String.join("; ", seen);
    }

    /** What this JVM (ingest-api's) went through during [from, to]: stalls, slow looks, pool waits, collector pauses. */
    private List<String> processDuring(long from, long to) {
        List<String> seen = new ArrayList<>();
        int awaiting = 0;
        long gcFrom = -1;
        long gcTo = -1;
        for (Tick t : ticks) {
            if (t.at() >= from - EVERY_MILLIS * 1_000_000 && t.at() <= to + EVERY_MILLIS * 1_000_000) {
                awaiting = Math.max(awaiting, t.awaitingConnection());
                gcFrom = gcFrom < 0 ? t.gcMillis() : gcFrom;
                gcTo = t.gcMillis();
            }
        }
        long[] span = {from, to};
        late.stream()
                .filter(l -> overlaps(l, span))
                .forEach(l -> seen.add("this JVM stalled for " + millis(l) + " ms"));
        slowLooks.stream()
                .filter(l -> overlaps(l, span))
                .forEach(l -> seen.add("a look at the locks took " + millis(l) + " ms"));
        if (awaiting > 0) {
            seen.add("up to " + awaiting + " ingest requests waiting for a pool connection");
        }
        if (gcTo > gcFrom) {
            seen.add((gcTo - gcFrom) + " ms of collector pauses in this JVM");
        }
        return seen;
    }

    /**
     * The report's table rows: each slow look (when, how long, whether {@code DO 1} was as slow, the faults in
     * progress), the lock holders seen, this JVM's stalls.
     */
    synchronized String rows(ChaosFaults faults, long origin) {
        StringBuilder sb = new StringBuilder();
        for (long[] look : slowLooks) {
            List<String> during = new ArrayList<>(
                    faults.faultsDuring(new ChaosWorkload.Post("", 0, look[0], look[1] - look[0]), origin));
            if (faults.outages().stream().anyMatch(o -> overlaps(o, look))) {
                during.add("the broker away");
            }
            sb.append("| slow look at the locks: from / took (ms into the run); DO 1 as slow / faults | ")
                    .append((look[0] - origin) / 1_000_000)
                    .append(" / ")
                    .append(millis(look))
                    .append("; ")
                    .append(slowPings.stream()
                            .filter(p -> overlaps(p, look))
                            .map(p -> millis(p) + " ms")
                            .toList())
                    .append(" / ")
                    .append(during)
                    .append(" |\n");
        }
        sb.append("| lock holders that kept a statement waiting: seen / held 500 ms or longer (looks failed) | ")
                .append(holders.size())
                .append(" / ")
                .append(holders.values().stream()
                        .filter(h -> h.heldMillis() >= 500)
                        .count())
                .append(" (")
                .append(failedLooks)
                .append(firstFailure == null ? "" : ", the first: " + firstFailure)
                .append(") |\n");
        Map<String, Long> byProcess = new java.util.TreeMap<>();
        holders.values().stream()
                .filter(h -> h.heldMillis() >= 500)
                .forEach(h -> byProcess.merge(h.owner == null ? "not known" : h.owner, 1L, Long::sum));
        sb.append("| lock holders held 500 ms or longer, by process | ")
                .append(byProcess)
                .append(" |\n");
        sb.append("| this JVM (ingest-api's): pauses between looks that ended ≥ ")
                .append(LATE_MILLIS)
                .append(" ms late (stalls) / the longest (ms); slow looks / the slowest (ms) | ")
                .append(late.size())
                .append(" / ")
                .append(late.stream().mapToLong(StallWitness::millis).max().orElse(0))
                .append("; ")
                .append(slowLooks.size())
                .append(" / ")
                .append(slowLooks.stream().mapToLong(StallWitness::millis).max().orElse(0))
                .append(" |\n");
        return sb.toString();
    }

    /** The report's closing section: the {@code n} lock holders that kept others waiting longest, and any dumps. */
    synchronized String longestHolders(int n) {
        List<Holder> longest = holders.values().stream()
                .sorted(Comparator.comparingLong(Holder::heldMillis).reversed())
                .limit(n)
                .toList();
        if (longest.isEmpty()) {
            return "";
        }
        StringBuilder sb = new StringBuilder("\n\nLock holders that kept others waiting longest:\n");
        for (Holder h : longest) {
            sb.append("\n- ").append(h);
            processDuring(h.firstSeen, h.lastSeen).forEach(p -> sb.append("; ").append(p));
        }
        dumps.forEach(d -> sb.append("\n- threads: ").append(d));
        return sb.toString();
    }

    private static boolean overlaps(long[] a, long[] b) {
        return a[0] <= b[1] && a[1] >= b[0];
    }

    private static long millis(long[] span) {
        return (span[1] - span[0]) / 1_000_000;
    }

    @Override
    public void close() throws InterruptedException {
        running = false;
        thread.join(5_000);
        try {
            if (connection != null) {
                connection.close();
            }
        } catch (SQLException ignored) {
            // closing anyway
        }
    }
}
