package dev.settle.bench;

import dev.settle.testsupport.SqlTrace;
import org.HdrHistogram.Histogram;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.function.BooleanSupplier;

/**
 * Figure 3: ingest-api, debounce-worker and one agent-worker on their own
 * database and broker, the model double answering after a drawn latency, replies observed at the webhook receiver.
 *
 * <p>Pipeline overhead: single-message sessions at a steady rate; for each, reply latency (webhook received − POST
 * sent) − debounce window − model time (the latency the double applied), plus where it went, from the rows' own
 * database times.
 */
final class PipelineBench {
    record Overhead(
            double statementsPerReply,
            int sessions,
            int replied,
            int multiCall,
            double rate,
            Histogram reply,
            Histogram overhead,
            Map<String, Histogram> stages,
            Profiler.Profile profile,
            IngestBench.Cpu cpu,
            List<AppSql> sql,
            List<TxTime> transactions) {}

    /**
     * One kind of transaction (named by its application and first statement): how many ran, their statements, and
     * their wall time on the sending thread from {@code START TRANSACTION}'s answer to {@code COMMIT}'s, in µs.
     */
    record TxTime(String app, String first, int count, int statements, Histogram micros) {}

    record Result(Overhead overhead) {}

    private PipelineBench() {}

    static Result run(Infra infra, Bench.Options o) throws Exception {
        try (Model model = new Model(o.latency());
                Hooks hooks = new Hooks()) {
            Map<String, Object> settings = new LinkedHashMap<>();
            settings.put("settle.llm.url", model.baseUrl());
            settings.put("settle.llm.timeout", "60s");
            settings.put("settle.webhook.url", hooks.url());
            settings.put("settle.debounce.window", o.window().toMillis() + "ms");
            settings.put("settle.debounce.maxwait", o.maxWait().toMillis() + "ms");
            try (Infra.Scenario s = infra.new Scenario("pipeline", settings)) {
                // each application's statements are booked to it (SqlTrace); the bench's own go through an untraced
                // connection
                ConfigurableApplicationContext ingest = s.ingest(traced(s, "ingest-api"));
                s.debounce(traced(s, "debounce-worker"));
                s.agent(traced(s, "agent-worker"));
                String base = "http://127.0.0.1:" + Infra.port(ingest);
                JdbcTemplate jdbc = new JdbcTemplate(new DriverManagerDataSource(s.jdbcUrl, "root", ""));
                warmUp(o, base, jdbc, model, hooks);
                return new Result(overhead(infra, o, base, jdbc, model, hooks));
            }
        }
    }

    private static Map<String, Object> traced(Infra.Scenario s, String app) {
        return Map.of("spring.datasource.url", SqlTrace.url(s.jdbcUrl, app));
    }

    /**
     * Per application: SQL statements and transactions (a COMMIT, or a write that committed on its own) caused by replies,
     * per reply; idle polls per second.
     */
    record AppSql(String app, double statementsPerReply, double transactionsPerReply, double idlePerSecond) {}

    static List<AppSql> perApp(List<SqlTrace.Statement> all, int replies, double seconds) {
        Map<String, List<SqlTrace.Statement>> byApp = new TreeMap<>();
        all.forEach(
                st -> byApp.computeIfAbsent(st.app(), a -> new ArrayList<>()).add(st));
        List<AppSql> out = new ArrayList<>();
        byApp.forEach((app, list) -> {
            List<SqlTrace.Statement> reply =
                    list.stream().filter(st -> !st.idlePoll()).toList();
            long tx = reply.stream().filter(SqlTrace.Statement::endsTransaction).count();
            out.add(new AppSql(
                    app,
                    reply.size() / (double) Math.max(1, replies),
                    tx / (double) Math.max(1, replies),
                    (list.size() - reply.size()) / seconds));
        });
        return out;
    }

    /**
     * A third as many sessions as the measured ones, through the same pipeline against a 100 ms model, counted
     * nowhere: the figure is the pipeline's steady overhead, the same whether this stage runs alone or after others
     * whose code the JIT compiled (run alone without it, one run's p99 was 546 ms; with it, 60 ms).
     */
    private static void warmUp(Bench.Options o, String base, JdbcTemplate jdbc, Model model, Hooks hooks)
            throws InterruptedException {
        int n = Math.max(1, o.overheadSessions() / 3);
        Bench.log("pipeline: warm-up, " + n + " sessions (not counted)");
        model.latency(Model.Latency.parse("fixed:100"));
        try {
            Load.paced(o.overheadRate(), n, i -> Load.post(base, "ovw-" + i, "sid=ovw-" + i + " lunch 35"));
            await(Duration.ofSeconds(30), () -> allAnswered(hooks, "ovw-", n));
            // each attempt is recorded after its webhook was answered: none of those statements may be counted
            await(Duration.ofSeconds(10), () -> n == jdbc.queryForObject("""
                    SELECT COUNT(*) FROM webhook_delivery d JOIN chat_session s ON s.id = d.session_id
                     WHERE s.external_id LIKE 'ovw-%' AND d.status = 'DELIVERED'""", Integer.class));
        } finally {
            model.latency(o.latency());
        }
    }

    /**
     * The transactions of every application, grouped by application and first statement (kinds that ran at least
     * {@code min} times), in the order of their count.
     */
    static List<TxTime> transactionTimes(List<SqlTrace.Statement> all, int min) {
        Map<Long, List<SqlTrace.Statement>> open = new HashMap<>();
        Map<String, List<List<SqlTrace.Statement>>> kinds = new LinkedHashMap<>();
        for (SqlTrace.Statement st : all) {
            String verb = st.sql().strip().toUpperCase(Locale.ROOT);
            if (verb.startsWith("START TRANSACTION")) {
                open.put(st.threadId(), new ArrayList<>(List.of(st)));
            } else if (open.containsKey(st.threadId())) {
                List<SqlTrace.Statement> tx = open.get(st.threadId());
                tx.add(st);
                if (verb.equals("COMMIT") && tx.size() > 2) {
                    open.remove(st.threadId());
                    String first = tx.get(1).sql().strip().replaceAll("\\s+", " ");
                    kinds.computeIfAbsent(
                                    st.app() + "\u0000" + first.substring(0, Math.min(48, first.length())),
                                    k -> new ArrayList<>())
                            .add(tx);
                } else if (verb.equals("COMMIT") || verb.equals("ROLLBACK")) {
                    open.remove(st.threadId());
                }
            }
        }
        List<TxTime> out = new ArrayList<>();
        kinds.forEach((key, txs) -> {
            if (txs.size() < min) {
                return;
            }
            Histogram h = Load.micros();
            txs.forEach(
                    tx -> Load.record(h, (tx.getLast().atNanos() - tx.getFirst().atNanos()) / 1000));
            String[] k = key.split("\u0000");
            int statements =
                    (int) Math.round(txs.stream().mapToInt(List::size).average().orElse(0));
            out.add(new TxTime(k[0], k[1], txs.size(), statements, h));
        });
        out.sort(Comparator.comparingInt(TxTime::count).reversed());
        return out;
    }

    private static Overhead overhead(
            Infra infra, Bench.Options o, String base, JdbcTemplate jdbc, Model model, Hooks hooks) throws Exception {
        int n = o.overheadSessions();
        double rate = o.overheadRate();
        Bench.log("pipeline: overhead, " + n + " single-message sessions at " + rate + "/s, model "
                + o.latency().describe());
        long[] sent = new long[n];
        var rec = o.profile() ? Profiler.start("pipeline") : null;
        double[] cpu0 = IngestBench.cpu(infra);
        long q0 = Infra.questions(jdbc);
        SqlTrace.start();
        long traceStart = System.nanoTime();
        Load.paced(rate, n, i -> {
            String sid = "ovh-" + i;
            sent[(int) i] = System.nanoTime();
            Load.post(base, sid, "sid=" + sid + " lunch 35");
        });
        await(Duration.ofSeconds(40), () -> allAnswered(hooks, "ovh-", n));
        IngestBench.Cpu cpu = IngestBench.cpu(infra, cpu0);
        long statements = Infra.questions(jdbc) - q0;
        // the last replies' own statements (delivery recorded, lease released) end after their webhooks: until the
        // count of non-idle statements has not moved for a second
        long last = -1;
        for (int i = 0; i < 30; i++) {
            long now = SqlTrace.snapshot().stream().filter(st -> !st.idlePoll()).count();
            if (now == last) {
                break;
            }
            last = now;
            Load.sleep(Duration.ofMillis(1000));
        }
        List<SqlTrace.Statement> traced = SqlTrace.stop();
        double tracedSeconds = (System.nanoTime() - traceStart) / 1e9;
        Profiler.Profile profile = rec == null ? null : Profiler.stop(rec, o.jfrDir());

        // database instants → this JVM's nanoTime (same machine clock; the offset is taken once)
        long offset = System.nanoTime() - toNanos(Instant.now());
        Map<String, Row> rows = new LinkedHashMap<>();
        jdbc.query(
                """
                SELECT s.external_id, m.created_at AS accepted, t.started_at, t.ended_at, d.delivered_at
                  FROM chat_session s
                  JOIN chat_message m ON m.session_id = s.id AND m.version = 1
                  JOIN chat_turn t ON t.session_id = s.id AND t.state = 'COMMITTED'
                  LEFT JOIN webhook_delivery d ON d.session_id = s.id
                 WHERE s.external_id LIKE 'ovh-%'""",
                rs -> {
                    rows.put(
                            rs.getString(1),
                            new Row(
                                    offset + toNanos(dev.settle.schema.DbTime.instant(rs, "accepted")),
                                    offset + toNanos(dev.settle.schema.DbTime.instant(rs, "started_at")),
                                    offset + toNanos(dev.settle.schema.DbTime.instant(rs, "ended_at"))));
                });
        Histogram reply = Load.micros();
        Histogram over = Load.micros();
        Map<String, Histogram> stages = new LinkedHashMap<>();
        for (String st : List.of(
                "POST → committed (ingest)",
                "committed → turn started, beyond the window (timer, Kafka, claim)",
                "turn started → model request (prompt)",
                "model done → reply committed (stream, persist, commit)",
                "reply committed → webhook received (outbox, POST)")) {
            stages.put(st, Load.micros());
        }
        List<Histogram> st = new ArrayList<>(stages.values());
        int replied = 0;
        int multi = 0;
        long windowNanos = o.window().toNanos();
        for (int i = 0; i < n; i++) {
            String sid = "ovh-" + i;
            Hooks.Hook hook = hooks.covering(sid, 1);
            List<Model.Call> calls = model.callsOf(sid);
            if (hook == null) {
                continue;
            }
            replied++;
            if (calls.size() != 1) {
                multi++;
                continue;
            }
            Model.Call call = calls.getFirst();
            long replyNanos = hook.receivedNanos() - sent[i];
            Load.record(reply, replyNanos / 1000);
            long ov = replyNanos - windowNanos - call.latencyMs() * 1_000_000;
            Load.record(over, Math.max(0, ov) / 1000);
            Row r = rows.get(sid);
            if (r != null) {
                long modelDone = call.arrivedNanos() + call.latencyMs() * 1_000_000;
                Load.record(st.get(0), Math.max(0, r.accepted - sent[i]) / 1000);
                Load.record(st.get(1), Math.max(0, r.started - r.accepted - windowNanos) / 1000);
                Load.record(st.get(2), Math.max(0, call.arrivedNanos() - r.started) / 1000);
                Load.record(st.get(3), Math.max(0, r.ended - modelDone) / 1000);
                Load.record(st.get(4), Math.max(0, hook.receivedNanos() - r.ended) / 1000);
            }
        }
        Bench.log("pipeline: " + replied + "/" + n + " replied; overhead p50 " + IngestBench.fmt(Load.ms(over, 50))
                + " ms, p99 " + IngestBench.fmt(Load.ms(over, 99)) + " ms");
        List<AppSql> sql = perApp(traced, replied, tracedSeconds);
        sql.forEach(a -> Bench.log("pipeline: " + a.app() + ": " + IngestBench.fmt(a.statementsPerReply())
                + " statements and " + IngestBench.fmt(a.transactionsPerReply()) + " transactions per reply, "
                + IngestBench.fmt(a.idlePerSecond()) + " idle polls/s"));
        return new Overhead(
                statements / (double) Math.max(1, replied),
                n,
                replied,
                multi,
                rate,
                reply,
                over,
                stages,
                profile,
                cpu,
                sql,
                transactionTimes(traced, replied / 2));
    }

    private record Row(long accepted, long started, long ended) {}

    /** Whether sessions {@code prefix}0 … {@code prefix}(n − 1) each have a reply covering their first message. */
    private static boolean allAnswered(Hooks hooks, String prefix, int n) {
        for (int i = 0; i < n; i++) {
            if (hooks.covering(prefix + i, 1) == null) {
                return false;
            }
        }
        return true;
    }

    static long toNanos(Instant i) {
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    static void await(Duration timeout, BooleanSupplier done) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!done.getAsBoolean() && System.nanoTime() < deadline) {
            Load.sleep(Duration.ofMillis(100));
        }
    }
}
