package dev.settle.bench;

import org.HdrHistogram.Histogram;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.BooleanSupplier;

/**
 * Figures 3 and 6 and the strategy comparison: ingest-api, debounce-worker and one agent-worker on their own
 * database and broker, the model double answering after a drawn latency, replies observed at the webhook receiver.
 *
 * <p>Pipeline overhead: single-message sessions at a steady rate; for each, reply latency (webhook received − POST
 * sent) − debounce window − model time (the latency the double applied), plus where it went, from the rows' own
 * database times.
 *
 * <p>Strategies: the same fast-typist workload (bursts of messages with short gaps, some longer than the window)
 * on sessions of policy merge, enqueue and reject, and on the naive baseline, all at the same time on the same
 * infrastructure.
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
            IngestBench.Cpu cpu) {}

    record Strategy(
            String name,
            int bursts,
            int messages,
            int unanswered,
            double repliesPerBurst,
            double stalePerBurst,
            double dupPerBurst,
            double rejectedPerBurst,
            double callsPerBurst,
            double tokensPerBurst,
            double discardedTokensPerBurst,
            double discardedShare,
            Histogram finalAnswer,
            Histogram interrupt) {}

    record Result(Overhead overhead, List<Strategy> strategies, Profiler.Profile strategyProfile) {}

    private record Burst(String sid, String strategy, long[] sent, long[] accepted, int[] status) {
        int acceptedCount() {
            int n = 0;
            for (int s : status) {
                n += s == 202 ? 1 : 0;
            }
            return n;
        }
    }

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
            // the strategies are compared under the fixed window: all their sessions share one tenant, whose
            // learned window would otherwise carry one strategy's pauses into the others' sessions
            settings.put("settle.debounce.adaptive", "false");
            try (Infra.Scenario s = infra.new Scenario("pipeline", settings)) {
                ConfigurableApplicationContext ingest = s.ingest();
                s.debounce();
                s.agent();
                String base = "http://127.0.0.1:" + Infra.port(ingest);
                JdbcTemplate jdbc = ingest.getBean(JdbcTemplate.class);
                Overhead overhead = overhead(infra, o, base, jdbc, model, hooks);
                var rec = o.profile() ? Profiler.start("strategies") : null;
                List<Strategy> strategies =
                        strategies(o, base, jdbc, ingest.getBean(TransactionTemplate.class), model, hooks);
                Profiler.Profile profile = rec == null ? null : Profiler.stop(rec, o.jfrDir());
                return new Result(overhead, strategies, profile);
            }
        }
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
        Load.paced(rate, n, i -> {
            String sid = "ovh-" + i;
            sent[(int) i] = System.nanoTime();
            Load.post(base, sid, "sid=" + sid + " lunch 35");
        });
        await(Duration.ofSeconds(40), () -> {
            for (int i = 0; i < n; i++) {
                if (hooks.covering("ovh-" + i, 1) == null) {
                    return false;
                }
            }
            return true;
        });
        IngestBench.Cpu cpu = IngestBench.cpu(infra, cpu0);
        long statements = Infra.questions(jdbc) - q0;
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
        return new Overhead(
                statements / (double) Math.max(1, replied), n, replied, multi, rate, reply, over, stages, profile, cpu);
    }

    private record Row(long accepted, long started, long ended) {}

    static long toNanos(Instant i) {
        return i.getEpochSecond() * 1_000_000_000L + i.getNano();
    }

    private static List<Strategy> strategies(
            Bench.Options o, String base, JdbcTemplate jdbc, TransactionTemplate tx, Model model, Hooks hooks)
            throws Exception {
        List<String> names = List.of("merge", "enqueue", "reject", "naive");
        int per = o.burstsPerStrategy();
        Bench.log("strategies: " + per + " fast-typist bursts each for " + names + ", " + o.burstSize()
                + " messages, gaps " + o.gapMinMs() + "–" + o.gapMaxMs() + " ms");
        Random random = new Random(7);
        List<Burst> bursts = new ArrayList<>();
        List<long[]> plans = new ArrayList<>();
        for (int i = 0; i < per; i++) {
            // the same plan (start offset and gaps) for the i-th burst of every strategy: the same workload
            long[] plan = new long[o.burstSize()];
            plan[0] = (long) (random.nextDouble() * o.burstSpread().toMillis());
            for (int k = 1; k < plan.length; k++) {
                plan[k] = o.gapMinMs() + (long) (random.nextDouble() * (o.gapMaxMs() - o.gapMinMs()));
            }
            plans.add(plan);
        }
        try (NaiveBaseline naive = new NaiveBaseline(jdbc, tx, model.baseUrl(), hooks.url())) {
            for (String name : names) {
                for (int i = 0; i < per; i++) {
                    String sid = name + "-" + i;
                    if (!name.equals("naive")) {
                        Load.put(base, "/v1/sessions/" + sid, "{\"policy\":\"" + name + "\"}");
                    }
                    bursts.add(new Burst(
                            sid, name, new long[o.burstSize()], new long[o.burstSize()], new int[o.burstSize()]));
                }
            }
            long start = System.nanoTime() + 500_000_000L;
            try (ExecutorService typists = Executors.newVirtualThreadPerTaskExecutor()) {
                for (int b = 0; b < bursts.size(); b++) {
                    Burst burst = bursts.get(b);
                    long[] plan = plans.get(b % per);
                    typists.execute(() -> type(burst, plan, start, base, naive));
                }
            }
            Bench.log("strategies: all messages sent; waiting for final answers");
            await(
                    Duration.ofSeconds(60),
                    () -> bursts.stream()
                            .allMatch(b -> hooks.covering(
                                            b.sid(), b.strategy().equals("naive") ? b.sent().length : b.acceptedCount())
                                    != null));
            Load.sleep(Duration.ofSeconds(3)); // late replies (duplicates) still count
            List<Strategy> result = new ArrayList<>();
            for (String name : names) {
                result.add(summarize(
                        name,
                        bursts.stream().filter(b -> b.strategy().equals(name)).toList(),
                        jdbc,
                        model,
                        hooks,
                        naive));
            }
            return result;
        }
    }

    private static void type(Burst b, long[] plan, long start, String base, NaiveBaseline naive) {
        try {
            long at = start + plan[0] * 1_000_000;
            for (int k = 0; k < plan.length; k++) {
                if (k > 0) {
                    at += plan[k] * 1_000_000;
                }
                Load.sleepUntil(at);
                String text = "sid=" + b.sid() + " expense " + (k + 1) + ": coffee " + (3 + k);
                b.sent()[k] = System.nanoTime();
                if (b.strategy().equals("naive")) {
                    naive.accept(b.sid(), text);
                    b.status()[k] = 202;
                } else {
                    b.status()[k] = Load.post(base, b.sid(), text);
                }
                b.accepted()[k] = System.nanoTime();
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static Strategy summarize(
            String name, List<Burst> bursts, JdbcTemplate jdbc, Model model, Hooks hooks, NaiveBaseline naive) {
        Histogram finalAnswer = Load.micros();
        long replies = 0;
        long stale = 0;
        long dup = 0;
        long rejected = 0;
        long calls = 0;
        long messages = 0;
        int unanswered = 0;
        for (Burst b : bursts) {
            messages += b.sent().length;
            // versions of accepted messages are 1..A, in order; when each became visible (202 received)
            List<Long> acceptedAt = new ArrayList<>();
            for (int k = 0; k < b.status().length; k++) {
                if (b.status()[k] == 202) {
                    acceptedAt.add(b.accepted()[k]);
                } else {
                    rejected++;
                }
            }
            List<Hooks.Hook> hs = new ArrayList<>(hooks.of(b.sid()).stream()
                    .collect(java.util.stream.Collectors.toMap(
                            Hooks.Hook::webhookId, h -> h, (x, y) -> x, LinkedHashMap::new))
                    .values());
            hs.sort(Comparator.comparingLong(Hooks.Hook::receivedNanos));
            long covered = 0;
            for (Hooks.Hook h : hs) {
                replies++;
                boolean newer = false;
                for (int v = (int) h.coversVersion() + 1; v <= acceptedAt.size(); v++) {
                    newer |= acceptedAt.get(v - 1) < h.receivedNanos();
                }
                stale += newer ? 1 : 0;
                dup += h.coversVersion() <= covered ? 1 : 0;
                covered = Math.max(covered, h.coversVersion());
            }
            calls += model.callsOf(b.sid()).size();
            Hooks.Hook fin = hs.stream()
                    .filter(h -> h.coversVersion() >= acceptedAt.size())
                    .findFirst()
                    .orElse(null);
            if (fin == null || acceptedAt.isEmpty()) {
                unanswered++;
            } else {
                Load.record(finalAnswer, (fin.receivedNanos() - b.sent()[b.sent().length - 1]) / 1000);
            }
        }
        long tokens;
        long discarded = 0;
        if (name.equals("naive")) {
            tokens = naive.tokens.get();
        } else {
            Map<String, Object> t = jdbc.queryForMap("""
                    SELECT COALESCE(SUM(t.prompt_tokens + t.completion_tokens), 0) AS total,
                           COALESCE(SUM(CASE WHEN t.state = 'DISCARDED' THEN t.prompt_tokens + t.completion_tokens END), 0) AS discarded
                      FROM chat_turn t JOIN chat_session s ON s.id = t.session_id
                     WHERE s.external_id LIKE ?""", name + "-%");
            tokens = ((Number) t.get("total")).longValue();
            discarded = ((Number) t.get("discarded")).longValue();
        }
        Histogram interrupt = Load.micros();
        if (!name.equals("naive")) {
            // early interrupt, on the database clock: the newer message's commit → the interrupted turn's DISCARDED
            // record (written after the stream was cancelled, so an upper bound of the cancel itself)
            for (Long micros : jdbc.queryForList("""
                    SELECT TIMESTAMPDIFF(MICROSECOND, m.created_at, t.ended_at)
                      FROM chat_turn t JOIN chat_session s ON s.id = t.session_id
                      JOIN chat_message m ON m.session_id = t.session_id AND m.version = t.to_version + 1
                     WHERE s.external_id LIKE ? AND t.state = 'DISCARDED' AND t.reason LIKE 'interrupted%'""", Long.class, name + "-%")) {
                Load.record(interrupt, Math.max(0, micros));
            }
        }
        double n = bursts.size();
        Strategy s = new Strategy(
                name,
                bursts.size(),
                (int) messages,
                unanswered,
                replies / n,
                stale / n,
                dup / n,
                rejected / n,
                calls / n,
                tokens / n,
                discarded / n,
                tokens == 0 ? 0 : discarded / (double) tokens,
                finalAnswer,
                interrupt);
        Bench.log("strategies: " + name + " replies/burst " + IngestBench.fmt(s.repliesPerBurst()) + ", stale "
                + IngestBench.fmt(s.stalePerBurst()) + ", dup " + IngestBench.fmt(s.dupPerBurst()) + ", rejected "
                + IngestBench.fmt(s.rejectedPerBurst()) + ", calls " + IngestBench.fmt(s.callsPerBurst()) + ", tokens "
                + IngestBench.fmt(s.tokensPerBurst()) + ", final p50 " + IngestBench.fmt(Load.ms(finalAnswer, 50))
                + " ms");
        return s;
    }

    static void await(Duration timeout, BooleanSupplier done) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!done.getAsBoolean() && System.nanoTime() < deadline) {
            Load.sleep(Duration.ofMillis(100));
        }
    }
}
