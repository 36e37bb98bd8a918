package dev.settle.agent;

import dev.settle.agent.turn.TurnOutcome;
import dev.settle.agent.turn.TurnRunner;
import dev.settle.schema.Policies;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.ModelRequest;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.stream.IntStream;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A long session: 200 answered messages, three still unanswered, then 200 replies committed after them (the
 * order an {@code enqueue} session reaches when bursts pile up while replies commit). Every unanswered message
 * reaches the model, the history is capped at the history limit (the newest messages, in conversation order), and
 * the reply commits, under every policy.
 */
class LongSessionTest {
    static final int ANSWERED = 200;
    static final int UNANSWERED = 3;
    static TestAgent agent;
    static ModelDouble model;

    @BeforeAll
    static void start() {
        model = ModelDouble.start();
        agent = new TestAgent("longsession", Map.of("settle.llm.url", model.baseUrl(), "settle.llm.max-attempts", "1"));
    }

    @AfterAll
    static void stop() {
        agent.close();
        model.close();
    }

    static List<String> policies() {
        return Policies.ALL.stream().sorted().toList();
    }

    @ParameterizedTest
    @MethodSource("policies")
    void every_unanswered_message_is_sent_after_200_replies_and_the_history_is_capped(String policy) {
        String marker = "long-" + policy + "-" + UUID.randomUUID();
        long session = longSession(policy, marker);
        int historyLimit = agent.bean(AgentSettings.class).agent().historyLimit();

        assertEquals(TurnOutcome.COMMITTED, agent.bean(TurnRunner.class).run(session));

        List<ModelRequest> calls =
                model.requests().stream().filter(r -> r.body().contains(marker)).toList();
        assertEquals(1, calls.size());
        List<ModelRequest.Msg> conversation = calls.getFirst().messages().stream()
                .filter(m -> !"system".equals(m.role()))
                .toList();
        List<String> pending = IntStream.rangeClosed(1, UNANSWERED)
                .mapToObj(i -> marker + " pending " + i)
                .toList();
        List<ModelRequest.Msg> tail = conversation.subList(conversation.size() - UNANSWERED, conversation.size());
        assertEquals(
                pending,
                tail.stream().map(ModelRequest.Msg::content).toList(),
                "every unanswered message, in order, last");
        List<ModelRequest.Msg> history = conversation.subList(0, conversation.size() - UNANSWERED);
        List<String> newest = IntStream.rangeClosed(ANSWERED - historyLimit / 2 + 1, ANSWERED)
                .mapToObj(v -> List.of("message " + v, "reply " + v))
                .flatMap(List::stream)
                .toList();
        assertEquals(historyLimit, newest.size());
        assertEquals(
                newest,
                history.stream().map(ModelRequest.Msg::content).toList(),
                "the history is the newest " + historyLimit + " committed messages, in conversation order");
        assertEquals(
                ANSWERED + UNANSWERED, agent.count("SELECT replied_version FROM chat_session WHERE id = ?", session));
        assertEquals(
                ANSWERED + 1,
                agent.count("SELECT COUNT(*) FROM chat_message WHERE session_id = ? AND role = 'assistant'", session));
        assertEquals(
                List.of(UNANSWERED * 1L),
                agent.jdbc.queryForList("""
                SELECT covers_version - covers_from + 1 FROM chat_message
                 WHERE session_id = ? AND role = 'assistant' AND covers_version = ?""", Long.class, session, ANSWERED + UNANSWERED),
                "one reply covers the three unanswered messages");
    }

    /** Messages 1..200 answered, 201..203 unanswered, then the 200 replies (ids after the unanswered messages). */
    private static long longSession(String policy, String marker) {
        String external = "long-" + UUID.randomUUID();
        agent.jdbc.update("""
                INSERT INTO chat_session (external_id, version, replied_version, policy, oldest_unanswered_at,
                                          last_message_at, created_at)
                VALUES (?, ?, ?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))""", external, ANSWERED + UNANSWERED, ANSWERED, policy);
        long id = agent.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, external);
        List<Object[]> users = IntStream.rangeClosed(1, ANSWERED + UNANSWERED)
                .mapToObj(v -> new Object[] {
                    "msg_" + UUID.randomUUID(),
                    id,
                    v <= ANSWERED ? "message " + v : marker + " pending " + (v - ANSWERED),
                    v
                })
                .toList();
        agent.jdbc.batchUpdate("""
                INSERT INTO chat_message (message_uid, session_id, role, text, version, created_at)
                VALUES (?, ?, 'user', ?, ?, UTC_TIMESTAMP(6))""", users);
        List<Object[]> replies = IntStream.rangeClosed(1, ANSWERED)
                .mapToObj(v -> new Object[] {"msg_" + UUID.randomUUID(), id, "reply " + v, v, v})
                .toList();
        agent.jdbc.batchUpdate("""
                INSERT INTO chat_message (message_uid, session_id, role, text, covers_from, covers_version, created_at)
                VALUES (?, ?, 'assistant', ?, ?, ?, UTC_TIMESTAMP(6))""", replies);
        return id;
    }
}
