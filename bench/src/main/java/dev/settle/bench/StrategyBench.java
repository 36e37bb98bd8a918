package dev.settle.bench;

import org.HdrHistogram.Histogram;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.transaction.support.TransactionTemplate;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Figure 6, cost: what each strategy pays for a burst, on the same workloads with the same seeds, side by side in
 * one run. Two scenarios, because the learned window is a deployment setting: a fixed window
 * ({@code settle.debounce.adaptive=false}) for {@code merge}, {@code merge + typing}, {@code enqueue},
 * {@code reject} and the naive baseline; the learned window for {@code merge + adaptive}.
 *
 * <p>Workloads ({@link Workload}):
 * <ul>
 *   <li><b>fast typist</b>: each session types {@code warm + measured} bursts one after another (the next starts a
 *       second after the previous one's final answer); only the last {@code measured} bursts count, so a learned
 *       window has seen {@code warm} bursts of its session. The i-th burst of every session has the same gaps,
 *       whatever the strategy.</li>
 *   <li><b>fast typist, fresh session</b> ({@code merge + adaptive} only): one burst each in new sessions of the
 *       tenant whose sessions typed the bursts above (its learned prior).</li>
 *   <li><b>slow user</b>: one message per burst, in a tenant of its own.</li>
 * </ul>
 * A {@code merge + typing} client signals typing as a chat client does while its user types: when a pause starts
 * and every second until the next message.
 *
 * <p>Per burst, from Settle's own accounting ({@code chat_turn}, turns whose versions lie in the burst): model
 * calls, prompt / cached / completion tokens, the share on discarded turns; the naive baseline's from the model
 * double's log. Time to final answer: the webhook of the first reply covering the burst's last message − that
 * message's POST.
 */
final class StrategyBench {
    /** Which sessions a row is about. */
    enum Workload {
        TYPIST("fast typist"),
        FRESH("fast typist, fresh session of a tenant that has typed"),
        SLOW("slow user (one message per burst)");

        final String label;

        Workload(String label) {
            this.label = label;
        }
    }

    /** One row of the table: a strategy on a workload, averaged over its measured bursts. */
    record Row(
            String strategy,
            Workload workload,
            int bursts,
            int unanswered,
            double repliesPerBurst,
            double stalePerBurst,
            double dupPerBurst,
            double rejectedPerBurst,
            double callsPerBurst,
            double promptPerBurst,
            double cachedPerBurst,
            double completionPerBurst,
            double discardedShare,
            Histogram finalAnswer) {}

    record Result(List<Row> rows, List<InterruptBench.Cuts> interrupts, Profiler.Profile profile) {}

    /** One burst as typed: the session's versions before it, when each message was sent and answered 202. */
    private record Burst(String sid, boolean measured, long baseVersion, long[] sent, int[] status) {
        int acceptedCount() {
            int n = 0;
            for (int s : status) {
                n += s == 202 ? 1 : 0;
            }
            return n;
        }

        long lastVersion() {
            return baseVersion + acceptedCount();
        }
    }

    private static final String STRATEGY_MERGE = "merge";
    private static final String TYPING = "merge + typing";
    private static final String ADAPTIVE = "merge + adaptive";
    private static final String NAIVE = "naive";
    private static final Duration THINK = Duration.ofSeconds(1);
    private static final Duration TYPING_EVERY = Duration.ofSeconds(1);
    private static final Duration ANSWER_TIMEOUT = Duration.ofSeconds(60);

    private StrategyBench() {}

    static Result run(Infra infra, Bench.Options o) throws Exception {
        var rec = o.profile() ? Profiler.start("strategies") : null;
        List<Row> rows = new ArrayList<>();
        List<InterruptBench.Cuts> interrupts = new ArrayList<>();
        try (Model model = new Model(o.latency(), true);
                Hooks hooks = new Hooks()) {
            try (Infra.Scenario s = infra.new Scenario("strategies", settings(o, model, hooks, false))) {
                rows.addAll(fixedWindow(s, o, model, hooks, interrupts));
            }
            try (Infra.Scenario s = infra.new Scenario("adaptive", settings(o, model, hooks, true))) {
                rows.addAll(adaptive(s, o, model, hooks));
            }
        }
        Profiler.Profile profile = rec == null ? null : Profiler.stop(rec, o.jfrDir());
        return new Result(rows, interrupts, profile);
    }

    private static Map<String, Object> settings(Bench.Options o, Model model, Hooks hooks, boolean adaptive) {
        return Map.of(
                "settle.llm.url",
                model.baseUrl(),
                "settle.llm.timeout",
                "60s",
                "settle.webhook.url",
                hooks.url(),
                "settle.debounce.window",
                o.window().toMillis() + "ms",
                "settle.debounce.maxwait",
                o.maxWait().toMillis() + "ms",
                "settle.debounce.adaptive",
                String.valueOf(adaptive),
                "settle.admin-key",
                Infra.ADMIN_KEY);
    }

    /** The fixed-window strategies, then (on the same stack) the interrupt latency by phase into {@code cuts}. */
    private static List<Row> fixedWindow(
            Infra.Scenario s, Bench.Options o, Model model, Hooks hooks, List<InterruptBench.Cuts> cuts)
            throws Exception {
        ConfigurableApplicationContext ingest = s.ingest();
        s.debounce();
        s.agent();
        String base = "http://127.0.0.1:" + Infra.port(ingest);
        JdbcTemplate jdbc = ingest.getBean(JdbcTemplate.class);
        List<String> names = List.of(STRATEGY_MERGE, TYPING, "enqueue", "reject", NAIVE);
        String slowKey = Load.tenant(base, "slow-fixed");
        Bench.log("strategies (fixed window): " + o.strategySessions() + " fast-typist sessions each for " + names
                + ", " + (o.warmBursts() + o.measuredBursts()) + " bursts of " + o.burstSize() + " messages, gaps "
                + o.gapMinMs() + "–" + o.gapMaxMs() + " ms; " + o.strategySessions() + " slow users");
        Map<String, List<Burst>> typed = new java.util.LinkedHashMap<>();
        List<Burst> slow = java.util.Collections.synchronizedList(new ArrayList<>());
        try (NaiveBaseline naive = new NaiveBaseline(
                        jdbc, ingest.getBean(TransactionTemplate.class), model.baseUrl(), hooks.url());
                ExecutorService users = Executors.newVirtualThreadPerTaskExecutor()) {
            for (String name : names) {
                List<Burst> bursts = java.util.Collections.synchronizedList(new ArrayList<>());
                typed.put(name, bursts);
                for (int i = 0; i < o.strategySessions(); i++) {
                    String sid = slug(name) + "-" + i;
                    if (!name.equals(NAIVE)) {
                        Load.put(base, "/v1/sessions/" + sid, "{\"policy\":\"" + policy(name) + "\"}");
                    }
                    int session = i;
                    users.execute(() -> typist(o, base, sid, Infra.API_KEY, session, name, naive, hooks, bursts));
                }
            }
            for (int i = 0; i < o.strategySessions(); i++) {
                String sid = "slow-fixed-" + i;
                int session = i;
                users.execute(() -> slowUser(o, base, sid, slowKey, session, hooks, slow));
            }
            users.shutdown();
            while (!users.awaitTermination(1, java.util.concurrent.TimeUnit.SECONDS)) {
                // the users finish when their last burst was answered (or timed out)
            }
            Load.sleep(Duration.ofSeconds(2)); // late replies (duplicates) still count
            List<Row> rows = new ArrayList<>();
            for (String name : names) {
                rows.add(summarize(name, Workload.TYPIST, typed.get(name), jdbc, model, hooks, naive));
            }
            rows.add(summarize(STRATEGY_MERGE, Workload.SLOW, slow, jdbc, model, hooks, naive));
            cuts.addAll(InterruptBench.run(o, base, jdbc, model));
            return rows;
        }
    }

    private static List<Row> adaptive(Infra.Scenario s, Bench.Options o, Model model, Hooks hooks) throws Exception {
        ConfigurableApplicationContext ingest = s.ingest();
        s.debounce();
        s.agent();
        String base = "http://127.0.0.1:" + Infra.port(ingest);
        JdbcTemplate jdbc = ingest.getBean(JdbcTemplate.class);
        String slowKey = Load.tenant(base, "slow-adaptive");
        Bench.log("strategies (learned window): " + o.strategySessions() + " fast-typist sessions, then "
                + o.strategySessions() + " fresh ones of the same tenant; " + o.strategySessions() + " slow users");
        List<Burst> typed = java.util.Collections.synchronizedList(new ArrayList<>());
        List<Burst> fresh = java.util.Collections.synchronizedList(new ArrayList<>());
        List<Burst> slow = java.util.Collections.synchronizedList(new ArrayList<>());
        try (ExecutorService users = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < o.strategySessions(); i++) {
                String sid = "adaptive-" + i;
                int session = i;
                users.execute(() -> typist(o, base, sid, Infra.API_KEY, session, ADAPTIVE, null, hooks, typed));
                String slowSid = "slow-adaptive-" + i;
                users.execute(() -> slowUser(o, base, slowSid, slowKey, session, hooks, slow));
            }
        }
        try (ExecutorService users = Executors.newVirtualThreadPerTaskExecutor()) {
            for (int i = 0; i < o.strategySessions(); i++) {
                String sid = "adaptive-fresh-" + i;
                // the fresh session's burst has the gaps of the typists' first measured burst
                int session = i;
                users.execute(() -> burst(
                        o,
                        base,
                        sid,
                        Infra.API_KEY,
                        0,
                        plan(o, session, o.warmBursts()),
                        ADAPTIVE,
                        null,
                        hooks,
                        fresh,
                        true));
            }
        }
        Load.sleep(Duration.ofSeconds(2));
        return List.of(
                summarize(ADAPTIVE, Workload.TYPIST, typed, jdbc, model, hooks, null),
                summarize(ADAPTIVE, Workload.FRESH, fresh, jdbc, model, hooks, null),
                summarize(ADAPTIVE, Workload.SLOW, slow, jdbc, model, hooks, null));
    }

    private static String policy(String strategy) {
        return strategy.startsWith(STRATEGY_MERGE) ? STRATEGY_MERGE : strategy;
    }

    private static String slug(String strategy) {
        return strategy.replace(" + ", "-");
    }

    /** The gaps of session {@code session}'s burst {@code index}: the same for every strategy. */
    private static long[] plan(Bench.Options o, int session, int index) {
        Random random = new Random(7L * 1_000_003 + session * 1_009L + index);
        long[] gaps = new long[o.burstSize()];
        for (int k = 1; k < gaps.length; k++) {
            gaps[k] = o.gapMinMs() + (long) (random.nextDouble() * (o.gapMaxMs() - o.gapMinMs()));
        }
        return gaps;
    }

    private static void typist(
            Bench.Options o,
            String base,
            String sid,
            String key,
            int session,
            String strategy,
            NaiveBaseline naive,
            Hooks hooks,
            List<Burst> out) {
        long version = 0;
        // sessions start spread over a second, so that their timers do not all fire at once
        Load.sleep(Duration.ofMillis(session * 1000L / Math.max(1, o.strategySessions())));
        for (int b = 0; b < o.warmBursts() + o.measuredBursts(); b++) {
            Burst burst = burst(
                    o, base, sid, key, version, plan(o, session, b), strategy, naive, hooks, out, b >= o.warmBursts());
            version = burst.lastVersion();
            Load.sleep(THINK);
        }
    }

    private static void slowUser(
            Bench.Options o, String base, String sid, String key, int session, Hooks hooks, List<Burst> out) {
        long version = 0;
        Load.sleep(Duration.ofMillis(session * 1000L / Math.max(1, o.strategySessions())));
        for (int b = 0; b < o.warmBursts() + o.measuredBursts(); b++) {
            Burst burst = burst(o, base, sid, key, version, new long[1], STRATEGY_MERGE, null, hooks, out, true);
            version = burst.lastVersion();
            Load.sleep(THINK);
        }
    }

    /** Types one burst with the planned gaps, then waits for the reply that covers its last message. */
    private static Burst burst(
            Bench.Options o,
            String base,
            String sid,
            String key,
            long baseVersion,
            long[] gaps,
            String strategy,
            NaiveBaseline naive,
            Hooks hooks,
            List<Burst> out,
            boolean measured) {
        Burst burst = new Burst(sid, measured, baseVersion, new long[gaps.length], new int[gaps.length]);
        long at = System.nanoTime();
        for (int k = 0; k < gaps.length; k++) {
            at += gaps[k] * 1_000_000;
            if (strategy.equals(TYPING) && k > 0) {
                signalWhileTyping(base, sid, key, at);
            }
            sleepUntil(at);
            String text = "sid=" + sid + " expense " + (baseVersion + k + 1) + ": coffee " + (3 + k);
            burst.sent()[k] = System.nanoTime();
            if (naive != null && strategy.equals(NAIVE)) {
                naive.accept(sid, text);
                burst.status()[k] = 202;
            } else {
                burst.status()[k] = Load.post(base, key, sid, text);
            }
        }
        out.add(burst);
        PipelineBench.await(ANSWER_TIMEOUT, () -> hooks.covering(sid, burst.lastVersion()) != null);
        return burst;
    }

    /** A chat client's typing indicator: a signal now and every second until the message is sent at {@code until}. */
    private static void signalWhileTyping(String base, String sid, String key, long until) {
        while (System.nanoTime() < until) {
            Load.typing(base, key, sid);
            sleepUntil(Math.min(until, System.nanoTime() + TYPING_EVERY.toNanos()));
        }
    }

    private static void sleepUntil(long nanoTime) {
        try {
            Load.sleepUntil(nanoTime);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static Row summarize(
            String strategy,
            Workload workload,
            List<Burst> all,
            JdbcTemplate jdbc,
            Model model,
            Hooks hooks,
            NaiveBaseline naive) {
        List<Burst> bursts = all.stream().filter(Burst::measured).toList();
        Histogram finalAnswer = Load.micros();
        long replies = 0;
        long stale = 0;
        long dup = 0;
        long rejected = 0;
        long calls = 0;
        long prompt = 0;
        long cached = 0;
        long completion = 0;
        long discarded = 0;
        int unanswered = 0;
        for (Burst b : bursts) {
            rejected += b.sent().length - b.acceptedCount();
            long last = b.lastVersion();
            List<Hooks.Hook> hs = hooks.of(b.sid()).stream()
                    .filter(h -> h.coversVersion() > b.baseVersion() && h.coversVersion() <= last)
                    .collect(java.util.stream.Collectors.toMap(
                            Hooks.Hook::webhookId, h -> h, (x, y) -> x, java.util.LinkedHashMap::new))
                    .values()
                    .stream()
                    .sorted(java.util.Comparator.comparingLong(Hooks.Hook::receivedNanos))
                    .toList();
            long covered = b.baseVersion();
            for (Hooks.Hook h : hs) {
                replies++;
                stale += h.coversVersion() < last && newerSentBefore(b, h) ? 1 : 0;
                dup += h.coversVersion() <= covered ? 1 : 0;
                covered = Math.max(covered, h.coversVersion());
            }
            Hooks.Hook fin = hs.stream()
                    .filter(h -> h.coversVersion() >= last)
                    .findFirst()
                    .orElse(null);
            if (fin == null || b.acceptedCount() == 0) {
                unanswered++;
            } else {
                Load.record(finalAnswer, (fin.receivedNanos() - b.sent()[b.sent().length - 1]) / 1000);
            }
            if (strategy.equals(NAIVE)) {
                long from = b.sent()[0];
                long to = fin == null ? Long.MAX_VALUE : fin.receivedNanos();
                for (Model.Call c : model.callsOf(b.sid())) {
                    if (c.arrivedNanos() >= from && c.arrivedNanos() <= to) {
                        calls++;
                        prompt += c.promptTokens();
                        cached += c.cachedTokens();
                        completion += c.completionTokens();
                    }
                }
            } else {
                Map<String, Object> t = jdbc.queryForMap(TOKENS_OF_BURST, b.sid(), b.baseVersion(), last);
                calls += number(t, "calls");
                prompt += number(t, "prompt");
                cached += number(t, "cached");
                completion += number(t, "completion");
                discarded += number(t, "discarded");
            }
        }
        double n = Math.max(1, bursts.size());
        long total = prompt + completion;
        Row row = new Row(
                strategy,
                workload,
                bursts.size(),
                unanswered,
                replies / n,
                stale / n,
                dup / n,
                rejected / n,
                calls / n,
                prompt / n,
                cached / n,
                completion / n,
                total == 0 ? 0 : discarded / (double) total,
                finalAnswer);
        Bench.log("strategies: " + strategy + ", " + workload.label + ": calls/burst "
                + IngestBench.fmt(row.callsPerBurst())
                + ", tokens on discarded turns " + IngestBench.fmt(row.discardedShare() * 100) + " %, final p50 "
                + IngestBench.fmt(Load.ms(finalAnswer, 50)) + " ms");
        return row;
    }

    /** A newer message of the burst was sent before this reply arrived, and the reply did not cover it. */
    private static boolean newerSentBefore(Burst b, Hooks.Hook h) {
        int covered = (int) (h.coversVersion() - b.baseVersion());
        int accepted = 0;
        for (int k = 0; k < b.status().length; k++) {
            if (b.status()[k] != 202) {
                continue;
            }
            accepted++;
            if (accepted > covered && b.sent()[k] < h.receivedNanos()) {
                return true;
            }
        }
        return false;
    }

    /**
     * The model calls and tokens of the turns that served a burst: turns of the session whose versions end inside
     * it (a turn that covered versions of an earlier burst too ends inside this one only if it was this burst's).
     */
    static final String TOKENS_OF_BURST = """
            SELECT COALESCE(SUM(t.model_calls), 0) AS calls,
                   COALESCE(SUM(t.prompt_tokens), 0) AS prompt,
                   COALESCE(SUM(t.cached_tokens), 0) AS cached,
                   COALESCE(SUM(t.completion_tokens), 0) AS completion,
                   COALESCE(SUM(CASE WHEN t.state = 'DISCARDED' THEN t.prompt_tokens + t.completion_tokens END), 0)
                     AS discarded
              FROM chat_turn t JOIN chat_session s ON s.id = t.session_id
             WHERE s.external_id = ? AND t.to_version > ? AND t.to_version <= ?""";

    private static long number(Map<String, Object> row, String column) {
        return ((Number) row.get(column)).longValue();
    }
}
