package dev.settle.bench;

import dev.settle.testsupport.WebhookReceiver;

import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;

/**
 * The webhook receiver (real HTTP, Standard Webhooks signatures checked) with an index of what it acknowledged:
 * per session, each reply's webhook-id, the last version it covers and when it arrived ({@link System#nanoTime()},
 * the clock the bench stamps its POSTs with).
 */
final class Hooks implements AutoCloseable {
    record Hook(String webhookId, String sid, long coversVersion, long receivedNanos, boolean signed, String type) {}

    /** The webhook type of an answered message. */
    static final String REPLY = "reply.created";

    final WebhookReceiver receiver = WebhookReceiver.start();
    /** Distinct webhook-ids acknowledged, by type (a retried delivery keeps its id and counts once). */
    private final Map<String, java.util.Set<String>> idsByType = new ConcurrentHashMap<>();

    private final Map<String, ConcurrentLinkedQueue<Hook>> bySid = new ConcurrentHashMap<>();

    Hooks() {
        receiver.answerWith(d -> {
            long now = System.nanoTime();
            if (d.json() != null) {
                String sid = d.json().path("data").path("sessionId").asString();
                long covers = d.json().path("data").path("coversVersion").asLong();
                boolean signed = d.webhookSignature() == null || WebhookReceiver.verify(Infra.WEBHOOK_SECRET, d);
                idsByType
                        .computeIfAbsent(d.json().path("type").asString(), k -> ConcurrentHashMap.newKeySet())
                        .add(d.webhookId());
                bySid.computeIfAbsent(sid, k -> new ConcurrentLinkedQueue<>())
                        .add(new Hook(
                                d.webhookId(),
                                sid,
                                covers,
                                now,
                                signed,
                                d.json().path("type").asString()));
            }
            return WebhookReceiver.Answer.status(200);
        });
    }

    String url() {
        return receiver.url();
    }

    List<Hook> of(String sid) {
        ConcurrentLinkedQueue<Hook> q = bySid.get(sid);
        return q == null ? List.of() : List.copyOf(q);
    }

    /** Distinct webhooks of {@code type} acknowledged so far. */
    long distinct(String type) {
        java.util.Set<String> ids = idsByType.get(type);
        return ids == null ? 0 : ids.size();
    }

    /** The first reply that covers {@code version}, or null. */
    Hook covering(String sid, long version) {
        return of(sid).stream()
                .filter(h -> h.coversVersion() >= version)
                .findFirst()
                .orElse(null);
    }

    @Override
    public void close() {
        receiver.close();
    }
}
