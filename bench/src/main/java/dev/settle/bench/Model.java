package dev.settle.bench;

import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelRequest;
import dev.settle.testsupport.ModelResponse;
import dev.settle.testsupport.PrefixCache;

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

        /** The same draw for the same seed. */
        long draw(long seed) {
            return minMs == maxMs ? minMs : new java.util.SplittableRandom(seed).nextLong(minMs, maxMs + 1);
        }

        String describe() {
            return minMs == maxMs ? minMs + " ms fixed" : "uniform " + minMs + "–" + maxMs + " ms";
        }
    }

    /** One model call, with the usage the double reported for it. */
    record Call(
            String sid,
            int sequence,
            long arrivedNanos,
            long latencyMs,
            int promptTokens,
            int cachedTokens,
            int completionTokens) {}

    final ModelDouble dbl;
    private volatile Latency latency;
    final ConcurrentLinkedQueue<Call> calls = new ConcurrentLinkedQueue<>();
    private final Map<String, ConcurrentLinkedQueue<Call>> bySid = new ConcurrentHashMap<>();
    /** Sessions whose id starts with a key: their first call's answer is reshaped by the value. */
    private final Map<String, java.util.function.UnaryOperator<ModelResponse>> firstCallShapes =
            new ConcurrentHashMap<>();
    /** A provider's prompt cache, simulated per session. */
    private final PrefixCache prefixCache = new PrefixCache();

    private final boolean paired;

    Model(Latency latency) {
        this(latency, false);
    }

    /**
     * @param paired draw each call's latency from its session's number and its last user message without the
     *     session tag, so that the i-th session of every strategy waits as long for the same message: strategies
     *     are compared on the same model times, not on the luck of the draw
     */
    Model(Latency latency, boolean paired) {
        this(latency, paired, true);
    }

    /**
     * @param watched false: a double without the front that watches clients leave, one socket per call instead of
     *     three (the in-flight figure holds ten thousand calls open, more than the process may open with the front)
     */
    Model(Latency latency, boolean paired, boolean watched) {
        this.dbl = watched ? ModelDouble.start() : ModelDouble.startUnwatched();
        this.latency = latency;
        this.paired = paired;
        dbl.respondWith(this::answer);
    }

    private static long pairKey(String sid, String lastUserText) {
        String number = sid.substring(sid.lastIndexOf('-') + 1);
        String text = lastUserText == null ? "" : SID.matcher(lastUserText).replaceAll("");
        return (number + "|" + text).hashCode() * 0x9E3779B97F4A7C15L;
    }

    /** The first call of every session whose id starts with {@code sidPrefix} is answered as {@code shape} makes it. */
    void shapeFirstCall(String sidPrefix, java.util.function.UnaryOperator<ModelResponse> shape) {
        firstCallShapes.put(sidPrefix, shape);
    }

    void latency(Latency l) {
        this.latency = l;
    }

    String baseUrl() {
        return dbl.baseUrl();
    }

    private ModelResponse answer(ModelRequest request) {
        long now = System.nanoTime();
        String user = request.allUserTextSinceLastAssistant();
        Matcher m = SID.matcher(request.body());
        String sid = m.find() ? m.group(1) : "?";
        long delay = paired ? latency.draw(pairKey(sid, request.lastUserText())) : latency.draw();

        String text = "Noted, " + sid + ": " + (user.length() > 200 ? user.substring(user.length() - 200) : user)
                + " — all booked, nothing else to do.";
        int promptTokens = PrefixCache.tokens(PrefixCache.prompt(request));
        int cachedTokens = prefixCache.remember(sid, request);
        int completion = PrefixCache.tokens(text);
        Call call = new Call(sid, request.sequence(), now, delay, promptTokens, cachedTokens, completion);
        calls.add(call);
        ConcurrentLinkedQueue<Call> ofSid = bySid.computeIfAbsent(sid, k -> new ConcurrentLinkedQueue<>());
        boolean first = ofSid.isEmpty();
        ofSid.add(call);
        ModelResponse answer = ModelResponse.text(text)
                .delay(Duration.ofMillis(delay))
                .chunkSize(16)
                .usage(promptTokens, cachedTokens, completion);
        if (first) {
            for (Map.Entry<String, java.util.function.UnaryOperator<ModelResponse>> shape :
                    firstCallShapes.entrySet()) {
                if (sid.startsWith(shape.getKey())) {
                    return shape.getValue().apply(answer);
                }
            }
        }
        return answer;
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
