package dev.settle.bench;

import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import org.HdrHistogram.Histogram;
import org.springframework.jdbc.core.JdbcTemplate;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.function.UnaryOperator;

/**
 * Interrupt latency by phase: how long after a newer message commits the model's HTTP request of the turn it makes
 * stale is closed, with a model whose time to first token is {@link #SILENCE}. Three phases of the first call: the
 * server has sent nothing (not even headers), it has sent the stream's headers and is still silent, and it is
 * streaming. For each session: one message; once its model call has been in its phase for {@link #SETTLE}, a
 * second message. Measured from the second message's commit (database clock) to the double's sight of the closed
 * connection.
 */
final class InterruptBench {
    static final Duration SILENCE = Duration.ofSeconds(5);
    static final Duration SETTLE = Duration.ofMillis(500);

    /** A phase of the model's answer and how the double's first answer of a session is shaped to sit in it. */
    enum Phase {
        BEFORE_HEADERS("before the response headers", r -> r.delay(SILENCE)),
        BEFORE_FIRST_TOKEN(
                "headers sent, before the first token",
                r -> r.delay(Duration.ZERO).firstEventDelay(SILENCE)),
        MID_STREAM("mid-stream", r -> r.delay(Duration.ZERO).chunkSize(2).chunkDelay(Duration.ofMillis(250)));

        final String label;
        final UnaryOperator<ModelResponse> shape;

        Phase(String label, UnaryOperator<ModelResponse> shape) {
            this.label = label;
            this.shape = shape;
        }

        String prefix() {
            return "cut-" + name().toLowerCase().replace('_', '-') + "-";
        }
    }

    /** One phase's cuts: latencies (µs) and how many newer messages left the request open. */
    record Cuts(Phase phase, Histogram latency, int sessions, int notCut) {}

    private InterruptBench() {}

    static List<Cuts> run(Bench.Options o, String base, JdbcTemplate jdbc, Model model) throws Exception {
        List<Cuts> result = new ArrayList<>();
        for (Phase phase : Phase.values()) {
            model.shapeFirstCall(phase.prefix(), phase.shape);
        }
        int n = o.interruptSessions();
        Bench.log("interrupts: " + n + " sessions per phase, model silent for " + SILENCE.toSeconds() + " s");
        try (ExecutorService users = Executors.newVirtualThreadPerTaskExecutor()) {
            for (Phase phase : Phase.values()) {
                for (int i = 0; i < n; i++) {
                    String sid = phase.prefix() + i;
                    long spread = i * 2000L / Math.max(1, n);
                    users.execute(() -> interrupt(base, sid, model, spread));
                }
            }
        }
        // the last newer messages were just posted: give their cuts time to be seen (a cut takes tens of ms)
        PipelineBench.await(Duration.ofSeconds(10), () -> {
            for (Phase phase : Phase.values()) {
                for (int i = 0; i < n; i++) {
                    List<Model.Call> calls = model.callsOf(phase.prefix() + i);
                    if (calls.isEmpty()
                            || model.dbl.disconnect(calls.getFirst().sequence()).isEmpty()) {
                        return false;
                    }
                }
            }
            return true;
        });
        for (Phase phase : Phase.values()) {
            Histogram latency = Load.micros();
            int notCut = 0;
            for (int i = 0; i < n; i++) {
                String sid = phase.prefix() + i;
                List<Model.Call> calls = model.callsOf(sid);
                Instant newer = committedAt(jdbc, sid, 2);
                ModelDouble.Disconnect cut = calls.isEmpty()
                        ? null
                        : model.dbl.disconnect(calls.getFirst().sequence()).orElse(null);
                if (cut == null || newer == null) {
                    notCut++;
                } else {
                    Load.record(
                            latency,
                            Math.max(0, Duration.between(newer, cut.at()).toNanos() / 1000));
                }
            }
            Bench.log("interrupts, " + phase.label + ": p50 " + IngestBench.fmt(Load.ms(latency, 50)) + " ms, p99 "
                    + IngestBench.fmt(Load.ms(latency, 99)) + " ms, not cut " + notCut);
            result.add(new Cuts(phase, latency, n, notCut));
        }
        return result;
    }

    private static void interrupt(String base, String sid, Model model, long spreadMs) {
        Load.sleep(Duration.ofMillis(spreadMs));
        Load.post(base, sid, "sid=" + sid + " expense 1: coffee 3");
        PipelineBench.await(Duration.ofSeconds(30), () -> !model.callsOf(sid).isEmpty());
        Load.sleep(SETTLE);
        Load.post(base, sid, "sid=" + sid + " expense 2: tea 2");
    }

    /** When the session's message of this version committed, on the database clock; null if it did not. */
    static final String COMMITTED_AT = """
            SELECT m.created_at FROM chat_message m JOIN chat_session s ON s.id = m.session_id
             WHERE s.external_id = ? AND m.version = ?""";

    private static Instant committedAt(JdbcTemplate jdbc, String sid, long version) {
        List<Instant> at =
                jdbc.query(COMMITTED_AT, (rs, i) -> dev.settle.schema.DbTime.instant(rs, "created_at"), sid, version);
        return at.isEmpty() ? null : at.getFirst();
    }
}
