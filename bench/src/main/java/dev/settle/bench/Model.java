package dev.settle.bench;

import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelRequest;
import dev.settle.testsupport.ModelResponse;

import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.ThreadLocalRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The HTTP model double (OpenAI chat-completions protocol, streamed) scripted with a latency drawn from a
 * distribution before the first byte, and a log of every call: which session it served (the {@code sid=} tag the
 * bench puts in every user message), when it arrived, its latency (the model time of the figures) and its usage.
 */
final class Model implements AutoCloseable {
    private static final Pattern SID = Pattern.compile("sid=([A-Za-z0-9_-]+)");

    /** A latency distribution: {@code uniform:MIN_MS:MAX_MS} or {@code fixed:MS}. */
    record Latency(String spec, long minMs, long maxMs) {
        static Latency parse(String spec) {
            String[] p = spec.split(":");
            return switch (p[0]) {
                case "uniform" -> new Latency(spec, Long.parseLong(p[1]), Long.parseLong(p[2]));
                case "fixed" -> new Latency(spec, Long.parseLong(p[1]), Long.parseLong(p[1]));
                default ->
                    throw new IllegalArgumentException(
                            "latency must be uniform:MIN_MS:MAX_MS or fixed:MS, was " + spec);
            };
        }

        long draw() {
            return minMs == maxMs ? minMs : ThreadLocalRandom.current().nextLong(minMs, maxMs + 1);
        }

        String describe() {
            return minMs == maxMs ? minMs + " ms fixed" : "uniform " + minMs + "–" + maxMs + " ms";
        }
    }

    /** One model call. */
    record Call(String sid, long arrivedNanos, long latencyMs, int promptTokens, int completionTokens) {}

    final ModelDouble dbl = ModelDouble.start();
    private volatile Latency latency;
    final ConcurrentLinkedQueue<Call> calls = new ConcurrentLinkedQueue<>();
    private final Map<String, ConcurrentLinkedQueue<Call>> bySid = new ConcurrentHashMap<>();

    Model(Latency latency) {
        this.latency = latency;
        dbl.respondWith(this::answer);
    }

    void latency(Latency l) {
        this.latency = l;
    }

    String baseUrl() {
        return dbl.baseUrl();
    }

    private ModelResponse answer(ModelRequest request) {
        long now = System.nanoTime();
        long delay = latency.draw();
        String user = request.allUserTextSinceLastAssistant();
        Matcher m = SID.matcher(request.body());
        String sid = m.find() ? m.group(1) : "?";
        int promptChars = request.messages().stream()
                .mapToInt(x -> x.content() == null ? 0 : x.content().length())
                .sum();
        String text = "Noted, " + sid + ": " + (user.length() > 200 ? user.substring(user.length() - 200) : user)
                + " — all booked, nothing else to do.";
        int prompt = Math.max(1, promptChars / 4);
        int completion = Math.max(1, text.length() / 4);
        Call call = new Call(sid, now, delay, prompt, completion);
        calls.add(call);
        bySid.computeIfAbsent(sid, k -> new ConcurrentLinkedQueue<>()).add(call);
        return ModelResponse.text(text)
                .delay(Duration.ofMillis(delay))
                .chunkSize(16)
                .usage(prompt, completion);
    }

    List<Call> callsOf(String sid) {
        ConcurrentLinkedQueue<Call> q = bySid.get(sid);
        return q == null ? List.of() : List.copyOf(q);
    }

    @Override
    public void close() {
        dbl.close();
    }
}
