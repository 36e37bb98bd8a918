package dev.settle.ingest;

import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInstance;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;

/** The session view sums every turn's billed tokens and the discarded turns' apart; the turns view shows each. */
@TestInstance(TestInstance.Lifecycle.PER_CLASS)
class TokenViewTest {
    IngestApp app;

    @BeforeAll
    void start() {
        app = new IngestApp("tokenview");
    }

    @AfterAll
    void stop() {
        app.close();
    }

    private void turn(long pk, String state, int prompt, int cached, int completion, boolean estimated) {
        app.jdbc.update("""
                INSERT INTO chat_turn (session_id, lease_token, lease_epoch, from_version, to_version, state, started_at,
                                       model_calls, prompt_tokens, cached_tokens, completion_tokens, tokens_estimated)
                VALUES (?, ?, 1, 1, 1, ?, UTC_TIMESTAMP(6), 1, ?, ?, ?, ?)""", pk, UUID.randomUUID().toString(), state, prompt, cached, completion, estimated);
    }

    @Test
    void tokens_per_session_and_per_turn() {
        String s = "tok-" + UUID.randomUUID();
        assertEquals(
                202,
                app.post("/v1/sessions/" + s + "/messages", "application/json", "{\"text\":\"hi\"}")
                        .statusCode());
        long pk = app.jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, s);
        turn(pk, "DISCARDED", 100, 0, 7, true);
        turn(pk, "COMMITTED", 120, 96, 30, false);

        JsonNode session =
                JsonMapper.shared().readTree(app.get("/v1/sessions/" + s).body());
        assertEquals(107, session.get("discardedTokens").asLong());
        assertEquals(JsonMapper.shared().readTree("""
                                {"prompt":220,"cached":96,"completion":37,"estimated":true,
                                 "discarded":{"prompt":100,"cached":0,"completion":7}}"""), session.get("tokens"));
        JsonNode turns = JsonMapper.shared()
                .readTree(app.get("/v1/sessions/" + s + "/turns").body())
                .get("turns");
        assertEquals(0, turns.get(0).get("cachedTokens").asInt());
        assertEquals(96, turns.get(1).get("cachedTokens").asInt());
        assertEquals(true, turns.get(0).get("tokensEstimated").asBoolean());
    }
}
