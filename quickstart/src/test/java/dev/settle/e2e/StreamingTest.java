package dev.settle.e2e;

import dev.settle.quickstart.SettleLauncher;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelResponse;
import io.micrometer.core.instrument.MeterRegistry;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.context.ConfigurableApplicationContext;
import tools.jackson.databind.JsonNode;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;

import static dev.settle.e2e.SettleSystem.sleep;
import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Streaming, the event stream, early interrupt and the double-texting policies. Chunk writes are slowed
 * down on purpose (flush delay 20 ms, batches of 4) so that a reader, an interrupt or a second message meets a
 * reply whose chunks are still being written ("nothing streamed is lost").
 */
class StreamingTest {
    static final Duration LONG = Duration.ofSeconds(40);
    static SettleSystem settle;
    static ConfigurableApplicationContext secondIngest;

    @BeforeAll
    static void start() {
        settle = new SettleSystem(
                "streaming",
                true,
                Map.of(
                        "settle.stream.flush-delay", "20ms",
                        "settle.stream.batch-size", "4"));
        secondIngest = settle.launcher.startIngestApi(Map.of("server.port", "0"));
    }

    @AfterAll
    static void stop() {
        settle.close();
    }

    @BeforeEach
    void reset() {
        settle.model.reset();
        settle.receiver.reset();
    }

    static String words(String prefix, int n) {
        StringBuilder sb = new StringBuilder(prefix);
        for (int i = 0; i < n; i++) {
            sb.append(" word").append(i);
        }
        return sb.toString();
    }

    String committedText(String s) {
        return settle.jdbc.queryForObject("""
                SELECT m.text FROM chat_message m JOIN chat_session s ON s.id = m.session_id
                 WHERE s.external_id = ? AND m.role = 'assistant'""", String.class, s);
    }

    /** The persisted chunks of every turn of a session, concatenated per turn, in turn order. */
    List<String> persistedPerTurn(String s) {
        List<String> out = new ArrayList<>();
        for (Long turn : settle.jdbc.queryForList("""
                SELECT t.id FROM chat_turn t JOIN chat_session s ON s.id = t.session_id WHERE s.external_id = ? ORDER BY t.id""", Long.class, s)) {
            StringBuilder sb = new StringBuilder();
            for (String data : settle.jdbc.queryForList(
                    "SELECT data FROM session_event WHERE turn_id = ? AND type = 'reply.delta' ORDER BY chunk_seq",
                    String.class,
                    turn)) {
                sb.append(SseClient.JSON.readTree(data).get("text").asString());
            }
            out.add(sb.toString());
        }
        return out;
    }

    @Test
    void slow_chunk_writes_under_a_fast_stream_lose_nothing_over_many_turns() throws Exception {
        int sessions = 24;
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < sessions; i++) {
            ids.add(SettleSystem.newSessionId());
        }
        settle.model.respondWith(r -> {
            String user = r.lastUserText();
            return ModelResponse.text(words("reply to " + user + " ünïcödé 🍜", 80))
                    .chunkSize(1 + user.length() % 3);
        });
        try (ExecutorService clients = Executors.newFixedThreadPool(8)) {
            List<Future<?>> posts = new ArrayList<>();
            for (String s : ids) {
                posts.add(clients.submit(() -> settle.post(s, s)));
            }
            for (Future<?> f : posts) {
                f.get();
            }
        }
        await("every session answered")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> ids.stream().allMatch(s -> settle.replies(s).size() == 1));
        for (String s : ids) {
            String expected = words("reply to " + s + " ünïcödé 🍜", 80);
            assertEquals(expected, committedText(s), s);
            assertEquals(List.of(expected), persistedPerTurn(s), "persisted chunks equal the streamed text for " + s);
            Set<Integer> seqs = new HashSet<>(settle.jdbc.queryForList("""
                    SELECT e.chunk_seq FROM session_event e JOIN chat_session s ON s.id = e.session_id
                     WHERE s.external_id = ? AND e.type = 'reply.delta'""", Integer.class, s));
            for (int k = 1; k <= seqs.size(); k++) {
                assertTrue(seqs.contains(k), "chunk " + k + " of " + s);
            }
        }
    }

    @Test
    void a_client_that_reconnects_with_last_event_id_gets_every_delta_exactly_once() throws Exception {
        String s = SettleSystem.newSessionId();
        String reply = words("streamed slowly", 60);
        settle.model.respondWith(r -> r.body().contains(s)
                ? ModelResponse.text(reply).chunkSize(5).chunkDelay(Duration.ofMillis(25))
                : ModelDouble.echo(r));
        settle.post(s, "tell me " + s);
        String url = settle.baseUrl() + "/v1/sessions/" + s + "/events";
        List<SseClient.Event> first = SseClient.read(
                url,
                SettleSystem.KEY,
                null,
                e -> e.type().equals("reply.delta") && e.data().get("seq").asInt() >= 10);
        long lastId = first.getLast().id();
        sleep(Duration.ofMillis(600)); // away while more deltas are produced
        int lastSeq = first.getLast().data().get("seq").asInt();
        int producedWhileAway = settle.jdbc.queryForObject("""
                SELECT COUNT(*) FROM session_event e JOIN chat_session s ON s.id = e.session_id
                 WHERE s.external_id = ? AND e.type = 'reply.delta' AND e.chunk_seq > ?""", Integer.class, s, lastSeq);
        assertTrue(producedWhileAway > 0, "deltas were persisted while the client was away");
        // reconnect to another ingest-api instance: the stream comes from the database, not from memory
        String other = "http://127.0.0.1:" + SettleLauncher.port(secondIngest) + "/v1/sessions/" + s + "/events";
        List<SseClient.Event> second =
                SseClient.read(other, SettleSystem.KEY, lastId, e -> e.type().equals("reply.created"));

        List<SseClient.Event> all = new ArrayList<>(first);
        all.addAll(second);
        String deltas = SseClient.deltasExactlyOnce(all);
        assertEquals("message.accepted", all.getFirst().type());
        assertEquals("turn.started", all.get(1).type());
        assertEquals(reply, deltas);
        assertEquals(committedText(s), deltas);
        assertEquals(reply, second.getLast().data().get("text").asString());
        assertEquals(1, second.getLast().data().get("coversVersion").asLong());
    }

    @Test
    void a_stream_opened_before_the_first_message_shows_the_whole_first_turn_exactly_once() throws Exception {
        String s = SettleSystem.newSessionId();
        String reply = words("the first reply", 30);
        settle.model.respondWith(r -> r.body().contains(s)
                ? ModelResponse.text(reply).chunkSize(5).chunkDelay(Duration.ofMillis(5))
                : ModelDouble.echo(r));
        // opened on the other ingest-api instance than the message: the waiting stream finds the session in the
        // database
        String url = "http://127.0.0.1:" + SettleLauncher.port(secondIngest) + "/v1/sessions/" + s + "/events";
        var opened = SseClient.open(url, SettleSystem.KEY, null);
        assertEquals(
                0,
                settle.jdbc.queryForObject(
                        "SELECT COUNT(*) FROM chat_session WHERE external_id = ?", Integer.class, s));
        settle.post(s, "tell me " + s);
        List<SseClient.Event> all = SseClient.read(opened, e -> e.type().equals("reply.created"));

        String deltas = SseClient.deltasExactlyOnce(all);
        assertEquals(1, all.getFirst().id());
        assertEquals(
                List.of("message.accepted", "turn.started", "reply.created"),
                all.stream()
                        .map(SseClient.Event::type)
                        .filter(t -> !t.equals("reply.delta"))
                        .toList());
        assertEquals(reply, deltas);
        assertEquals(committedText(s), deltas);
        assertEquals(1, all.getLast().data().get("coversVersion").asLong());
    }

    @Test
    void a_message_during_a_slow_stream_cancels_it_early_and_one_reply_covers_both() {
        String s = SettleSystem.newSessionId();
        String slow = words("slow answer", 300); // 230 chunks x 50 ms: about 12 s of streaming
        settle.model.respondWith(r -> !r.body().contains(s)
                ? ModelDouble.echo(r)
                : r.body().contains("second " + s)
                        ? ModelResponse.text("both answered").usage(40, 3)
                        : ModelResponse.text(slow)
                                .chunkSize(8)
                                .chunkDelay(Duration.ofMillis(50))
                                .usage(30, 200));
        settle.post(s, "first " + s);
        await("the slow stream is streaming")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.jdbc.queryForObject("""
                        SELECT COUNT(*) FROM session_event e JOIN chat_session s ON s.id = e.session_id
                         WHERE s.external_id = ? AND e.type = 'reply.delta'""", Integer.class, s) >= 3);
        MeterRegistry meters = settle.agent.getBean(MeterRegistry.class);
        double metricBefore = meters.counter("settle.discarded.tokens").count();
        settle.post(s, "second " + s);
        // the interrupt cuts the stream well before its end: the model double notices the closed connection at a
        // chunk write, so with events of its answer still unsent (a client leaving after the last write is not
        // counted), and by then it had streamed less than half of the answer (persisted: what the agent received)
        org.awaitility.Awaitility.await("the interrupted turn is DISCARDED and its stream cancelled")
                .atMost(LONG)
                .until(() -> settle.turnStates(s).getFirst().equals("DISCARDED") && settle.model.cancelledCount() == 1);
        assertEquals(1, settle.model.cancelledCount(), "the model double saw the stream closed before its last chunk");
        int cutAt = persistedPerTurn(s).getFirst().length();
        assertTrue(
                cutAt < slow.length() / 2,
                "the stream was cut after " + cutAt + " of " + slow.length()
                        + " characters: the interrupt must land well before the answer would have finished");

        await("one reply")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        sleep(Duration.ofMillis(500));
        assertEquals(
                "reply.created",
                settle.webhooks(s).getFirst().json().get("type").asString(),
                settle.webhooks(s).getFirst().body() + " turns: " + settle.get("/v1/sessions/" + s + "/turns"));
        assertEquals(
                "both answered",
                settle.webhooks(s).getFirst().json().get("data").get("text").asString());
        assertEquals(
                2,
                settle.webhooks(s)
                        .getFirst()
                        .json()
                        .get("data")
                        .get("coversVersion")
                        .asLong());
        JsonNode turns = settle.get("/v1/sessions/" + s + "/turns").get("turns");
        assertEquals(2, turns.size());
        assertEquals("DISCARDED", turns.get(0).get("state").asString());
        assertTrue(turns.get(0).get("reason").asString().startsWith("interrupted"));
        assertEquals("COMMITTED", turns.get(1).get("state").asString());
        // the partial text of the interrupted turn is on record, shorter than the full answer, never a reply
        String partial = persistedPerTurn(s).getFirst();
        assertTrue(partial.length() > 0 && partial.length() < slow.length(), "partial: " + partial.length());
        assertTrue(slow.startsWith(partial));
        assertEquals(1, settle.replies(s).size());
        // its tokens are counted: per session, and as a metric of the agent worker. The stream was cut before
        // the model reported usage, so they are estimated: 4 characters per token of what was streamed
        long discarded = settle.get("/v1/sessions/" + s).get("discardedTokens").asLong();
        assertTrue(turns.get(0).get("tokensEstimated").asBoolean());
        assertEquals(partial.length() / 4, turns.get(0).get("completionTokens").asLong());
        assertTrue(turns.get(0).get("promptTokens").asLong() > 0);
        assertEquals(
                discarded,
                turns.get(0).get("promptTokens").asLong()
                        + turns.get(0).get("completionTokens").asLong());
        assertEquals(
                (double) discarded, meters.counter("settle.discarded.tokens").count() - metricBefore);
    }

    @Test
    void typing_past_max_wait_does_not_interrupt_the_running_turn() {
        String s = SettleSystem.newSessionId();
        settle.model.respondWith(r -> !r.body().contains(s)
                ? ModelDouble.echo(r)
                : ModelResponse.text(words("answer", 30)).chunkSize(6).chunkDelay(Duration.ofMillis(40)));
        int messages =
                32; // one every 200 ms (half the window) for 6.4 s, past the 4 s max-wait and on through the turn
        Instant stoppedTyping = null;
        for (int i = 1; i <= messages; i++) {
            settle.post(s, "typing " + i + " " + s);
            stoppedTyping = Instant.now();
            sleep(Duration.ofMillis(200));
        }
        Instant typingEnded = stoppedTyping;
        await("all answered")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() ->
                        settle.get("/v1/sessions/" + s).get("repliedVersion").asLong() == messages);
        assertTrue(
                settle.webhooks(s).getFirst().receivedAt().isBefore(typingEnded),
                "a turn committed while typing went on");
        // a turn may be interrupted only before the max-wait deadline of the oldest message it answered
        List<java.util.Map<String, Object>> turns = settle.jdbc.queryForList("""
                SELECT t.state, t.reason, t.ended_at, m.created_at AS oldest FROM chat_turn t
                  JOIN chat_session s ON s.id = t.session_id
                  JOIN chat_message m ON m.session_id = s.id AND m.version = t.from_version
                 WHERE s.external_id = ? ORDER BY t.id""", s);
        for (java.util.Map<String, Object> t : turns) {
            if ("DISCARDED".equals(t.get("state"))) {
                java.time.LocalDateTime deadline =
                        ((java.time.LocalDateTime) t.get("oldest")).plus(SettleSystem.MAX_WAIT);
                assertTrue(
                        ((java.time.LocalDateTime) t.get("ended_at")).isBefore(deadline.plusSeconds(1)),
                        "interrupted past its deadline: " + t);
            }
        }
        long next = 1;
        for (long[] reply : settle.replies(s)) {
            assertEquals(next, reply[0]);
            next = reply[1] + 1;
        }
        assertEquals(messages + 1, next);
    }

    /** The same script under each policy: A; B while A's turn generates. */
    int[] burstUnder(String policy) {
        String s = SettleSystem.newSessionId();
        settle.put("/v1/sessions/" + s, "{\"policy\":\"" + policy + "\"}");
        assertEquals(policy, settle.get("/v1/sessions/" + s).get("policy").asString());
        settle.model.respondWith(r -> !r.body().contains(s)
                ? ModelDouble.echo(r)
                : ModelResponse.text("answer "
                                + r.messages().stream()
                                        .filter(m -> "user".equals(m.role()))
                                        .count())
                        .chunkSize(2)
                        .chunkDelay(Duration.ofMillis(150)));
        settle.post(s, "A " + s);
        // the turn row exists only after the turn read its span, so B cannot slip into A's turn
        await("A's turn is generating")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() ->
                        settle.get("/v1/sessions/" + s + "/turns").get("turns").size() == 1
                                && "generating"
                                        .equals(settle.get("/v1/sessions/" + s)
                                                .get("state")
                                                .asString()));
        int status = settle.postStatus(s, "B " + s);
        await("settled")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> {
                    JsonNode session = settle.get("/v1/sessions/" + s);
                    return session.get("repliedVersion").asLong()
                                    == session.get("version").asLong()
                            && "idle".equals(session.get("state").asString());
                });
        sleep(Duration.ofMillis(500));
        return new int[] {
            status,
            settle.replies(s).size(),
            (int) settle.get("/v1/sessions/" + s).get("version").asLong(),
            (int) settle.turnStates(s).stream().filter("DISCARDED"::equals).count()
        };
    }

    @Test
    void each_policy_gives_its_exact_reply_count_on_the_same_burst() {
        int[] merge = burstUnder("merge");
        assertEquals(202, merge[0]);
        assertEquals(1, merge[1], "merge: one reply covering A and B");
        assertEquals(2, merge[2]);
        assertEquals(1, merge[3], "merge: A's turn interrupted");

        int[] enqueue = burstUnder("enqueue");
        assertEquals(202, enqueue[0]);
        assertEquals(2, enqueue[1], "enqueue: one reply per burst");
        assertEquals(2, enqueue[2]);
        assertEquals(0, enqueue[3], "enqueue: nothing discarded");

        int[] reject = burstUnder("reject");
        assertEquals(409, reject[0], "reject: B refused while A is answered");
        assertEquals(1, reject[1]);
        assertEquals(1, reject[2], "reject: B was not stored");
        assertEquals(0, reject[3]);
    }

    /**
     * Under {@code enqueue}, two bursts that both fire while a long turn runs get a reply each, in order. The
     * turn answering the first of them must stop at its burst end even though the second burst is already
     * stored when it reads its span (session_burst records where each burst ends, so they are not merged into
     * one reply).
     */
    @Test
    void enqueue_gives_each_burst_that_piled_up_during_a_long_turn_its_own_reply_in_order() {
        String s = SettleSystem.newSessionId();
        settle.put("/v1/sessions/" + s, "{\"policy\":\"enqueue\"}");
        settle.model.respondWith(r -> !r.body().contains(s)
                ? ModelDouble.echo(r)
                : r.lastUserText().startsWith("A ")
                        ? ModelResponse.text(words("answer to A", 30))
                                .chunkSize(4)
                                .chunkDelay(Duration.ofMillis(100))
                        : ModelResponse.text("answer to " + r.lastUserText()));
        settle.post(s, "A " + s);
        await("A's turn is generating")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() ->
                        settle.get("/v1/sessions/" + s + "/turns").get("turns").size() == 1
                                && "generating"
                                        .equals(settle.get("/v1/sessions/" + s)
                                                .get("state")
                                                .asString()));
        settle.post(s, "B1 " + s);
        settle.post(s, "B2 " + s);
        sleep(SettleSystem.WINDOW.multipliedBy(2)); // B's timer fires: a burst end at version 3
        settle.post(s, "C1 " + s);
        settle.post(s, "C2 " + s);
        // where the bursts ended is the debounce worker's call (on a loaded machine B1 and B2 can be a window
        // apart and form two bursts); what must hold is one reply per recorded burst, never one for all
        await("C's burst fired while A's turn still runs")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.jdbc.queryForObject("""
                        SELECT COUNT(*) FROM session_burst b JOIN chat_session s ON s.id = b.session_id
                         WHERE s.external_id = ? AND b.end_version = 5""", Integer.class, s) == 1);
        List<Long> ends = settle.jdbc.queryForList("""
                SELECT b.end_version FROM session_burst b JOIN chat_session s ON s.id = b.session_id
                 WHERE s.external_id = ? AND b.end_version > 1 ORDER BY b.end_version""", Long.class, s);
        assertEquals(List.of("RUNNING"), settle.turnStates(s), "the bursts must pile up during A's turn");
        assertTrue(ends.contains(3L) && ends.contains(5L), "B and C are separate bursts: " + ends);
        await("all five answered")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> {
                    JsonNode session = settle.get("/v1/sessions/" + s);
                    return session.get("repliedVersion").asLong() == 5
                            && "idle".equals(session.get("state").asString());
                });
        List<String> expected = new ArrayList<>(List.of("1-1"));
        long from = 2;
        for (long end : ends) {
            expected.add(from + "-" + end);
            from = end + 1;
        }
        List<long[]> replies = settle.replies(s);
        assertEquals(expected, replies.stream().map(r -> r[0] + "-" + r[1]).toList(), "one reply per burst, in order");
        assertEquals(java.util.Collections.nCopies(expected.size(), "COMMITTED"), settle.turnStates(s));
        assertEquals(0, (int) settle.jdbc.queryForObject("""
                SELECT COUNT(*) FROM session_burst b JOIN chat_session s ON s.id = b.session_id WHERE s.external_id = ?""", Integer.class, s), "the replies spent their burst ends");
    }

    /**
     * Tokens of a discarded turn: what the model reported for the calls that finished (a tool round: 30 prompt,
     * 5 completion), plus an estimate for the stream that was cut (4 characters per token). Per turn, per
     * session and in the {@code settle.discarded.tokens} metric, exactly.
     */
    @Test
    void a_discarded_turn_counts_the_usage_the_model_reported_plus_the_estimate_of_the_cut_stream() {
        String s = SettleSystem.newSessionId();
        settle.model.respondWith(r -> !r.body().contains(s)
                ? ModelDouble.echo(r)
                : r.body().contains("second " + s)
                        ? ModelResponse.text("both answered")
                        : r.messages().stream().noneMatch(m -> "tool".equals(m.role()))
                                ? ModelResponse.toolCall("list_categories", "{}")
                                        .usage(30, 5)
                                : ModelResponse.text(words("slow answer", 300))
                                        .chunkSize(8)
                                        .chunkDelay(Duration.ofMillis(50)));
        MeterRegistry meters = settle.agent.getBean(MeterRegistry.class);
        double metricBefore = meters.counter("settle.discarded.tokens").count();
        settle.post(s, "first " + s);
        await("the second model call is streaming")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.jdbc.queryForObject("""
                        SELECT COUNT(*) FROM session_event e JOIN chat_session s ON s.id = e.session_id
                         WHERE s.external_id = ? AND e.type = 'reply.delta'""", Integer.class, s) >= 3);
        settle.post(s, "second " + s);
        await("one reply")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.replies(s).size() == 1);
        await("settled")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> "idle"
                        .equals(settle.get("/v1/sessions/" + s).get("state").asString()));
        JsonNode turns = settle.get("/v1/sessions/" + s + "/turns").get("turns");
        assertEquals(2, turns.size());
        JsonNode cut = turns.get(0);
        assertEquals("DISCARDED", cut.get("state").asString());
        assertEquals(2, cut.get("modelCalls").asInt(), "the tool round and the cut stream");
        assertTrue(cut.get("tokensEstimated").asBoolean());
        String partial = persistedPerTurn(s).getFirst();
        assertEquals(
                5 + partial.length() / 4,
                cut.get("completionTokens").asLong(),
                "5 reported + the cut stream's estimate");
        assertTrue(cut.get("promptTokens").asLong() > 30, "30 reported + the estimate of the second prompt");
        long tokens =
                cut.get("promptTokens").asLong() + cut.get("completionTokens").asLong();
        assertEquals(
                tokens, settle.get("/v1/sessions/" + s).get("discardedTokens").asLong());
        assertEquals((double) tokens, meters.counter("settle.discarded.tokens").count() - metricBefore);
        assertEquals("COMMITTED", turns.get(1).get("state").asString());
        assertEquals(false, turns.get(1).get("tokensEstimated").asBoolean(), "a finished turn's usage is the model's");
    }

    /**
     * {@code reject} before any turn runs: a second message arrives right after the first, while the first waits
     * for its debounce timer (armed, or about to be). 409 as problem+json, nothing stored, the first answered alone.
     */
    @Test
    void reject_refuses_a_message_while_the_burst_before_it_is_unanswered() {
        String s = SettleSystem.newSessionId();
        settle.put("/v1/sessions/" + s, "{\"policy\":\"reject\"}");
        settle.post(s, "A " + s);
        var refused = settle.postRaw(s, "B " + s);
        assertEquals(409, refused.statusCode(), refused.body());
        assertEquals(
                "application/problem+json",
                refused.headers().firstValue("Content-Type").orElse("").split(";")[0]);
        JsonNode problem = SseClient.JSON.readTree(refused.body());
        assertEquals(409, problem.get("status").asInt());
        assertTrue(problem.get("type").asString().endsWith("session-busy"), refused.body());
        assertEquals(1, settle.get("/v1/sessions/" + s).get("version").asLong(), "B was not stored");
        await("A answered")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.replies(s).size() == 1);
        assertEquals(
                List.of("1-1"),
                settle.replies(s).stream().map(r -> r[0] + "-" + r[1]).toList());
        // answered and idle again: the next message is accepted
        await("idle")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> "idle"
                        .equals(settle.get("/v1/sessions/" + s).get("state").asString()));
        assertEquals(2, settle.post(s, "C " + s).get("version").asLong());
    }

    /**
     * The commit checks that what was persisted is what the model said. A chunk lost after it was written (its
     * row deleted behind the agent's back, mid-stream) makes the read-back differ: the turn fails loudly
     * (FAILED, turn.failed, a reply.failed webhook) and no reply with missing text is ever committed.
     */
    @Test
    void a_persisted_stream_that_differs_from_the_model_text_fails_the_turn_and_commits_nothing() {
        String s = SettleSystem.newSessionId();
        settle.model.respondWith(r -> r.body().contains(s)
                ? ModelResponse.text(words("answer", 60)).chunkSize(6).chunkDelay(Duration.ofMillis(30))
                : ModelDouble.echo(r));
        settle.post(s, "tell me " + s);
        await("a few deltas persisted")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.jdbc.queryForObject("""
                        SELECT COUNT(*) FROM session_event e JOIN chat_session s ON s.id = e.session_id
                         WHERE s.external_id = ? AND e.type = 'reply.delta'""", Integer.class, s) >= 3);
        assertEquals(1, settle.jdbc.update("""
                DELETE e FROM session_event e JOIN chat_session s ON s.id = e.session_id
                 WHERE s.external_id = ? AND e.type = 'reply.delta' AND e.chunk_seq = 1""", s));
        await("the turn ended")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> !settle.turnStates(s).contains("RUNNING")
                        && !settle.turnStates(s).isEmpty());
        assertEquals(List.of("FAILED"), settle.turnStates(s));
        JsonNode turn = settle.get("/v1/sessions/" + s + "/turns").get("turns").get(0);
        assertEquals(
                "persisted stream differs from the model's text",
                turn.get("reason").asString());
        assertEquals(0, settle.replies(s).size(), "no reply with missing text");
        await("reply.failed sent")
                .atMost(LONG)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> settle.webhooks(s).size() == 1);
        assertEquals(
                "reply.failed", settle.webhooks(s).getFirst().json().get("type").asString());
        assertEquals(1, (int) settle.jdbc.queryForObject("""
                SELECT COUNT(*) FROM session_event e JOIN chat_session s ON s.id = e.session_id
                 WHERE s.external_id = ? AND e.type = 'turn.failed'""", Integer.class, s));
    }
}
