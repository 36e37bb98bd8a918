package dev.settle.ingest;

import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import tools.jackson.databind.json.JsonMapper;

import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * An issued key's tenant is looked up once per {@code settle.auth.key-cache}, not once per request, and a revoked key
 * is still refused at once by the instance that revoked it — also when a lookup of the key is on its way as the
 * revocation commits — and by every other instance within one cache period.
 */
class ApiKeyCacheTest {
    static final JsonMapper JSON = JsonMapper.builder().build();
    static final String LOOKUP = "SELECT id, tenant_id FROM api_key WHERE key_hash = ? AND revoked_at IS NULL";
    static final Duration OTHER_INSTANCE_PERIOD = Duration.ofMillis(300);
    static String database;
    static IngestApp app;
    static IngestApp other;

    @BeforeAll
    static void start() {
        database = SharedInfra.newDatabase("keycache");
        app = new IngestApp(
                database,
                SharedInfra.kafkaBootstrap(),
                Map.of(
                        "settle.auth.key-cache",
                        "1h",
                        StatementCounter.PROPERTY,
                        StatementCounter.class.getName() + "," + LookupGate.class.getName()));
        other = new IngestApp(
                database,
                SharedInfra.kafkaBootstrap(),
                Map.of("settle.auth.key-cache", OTHER_INSTANCE_PERIOD.toMillis() + "ms"));
    }

    @AfterAll
    static void stop() {
        other.close();
        app.close();
    }

    /** A new tenant: its id, its key's id and its key. */
    static String[] newTenantKey() {
        String tenant = "k" + UUID.randomUUID().toString().substring(0, 8);
        HttpResponse<String> created =
                app.call("POST", "/v1/admin/tenants", IngestApp.ADMIN_KEY, "{\"id\":\"" + tenant + "\"}");
        assertEquals(201, created.statusCode(), created.body());
        var key = JSON.readTree(created.body()).get("apiKey");
        return new String[] {tenant, key.get("keyId").asString(), key.get("key").asString()};
    }

    static int get(IngestApp on, String key) {
        return on.get("/v1/sessions/s-" + UUID.randomUUID() + "/messages", key).statusCode();
    }

    static void revoke(String[] tenantKey) {
        assertEquals(
                204,
                app.call(
                                "DELETE",
                                "/v1/admin/tenants/" + tenantKey[0] + "/keys/" + tenantKey[1],
                                IngestApp.ADMIN_KEY,
                                null)
                        .statusCode());
    }

    static long lookups(Map<String, Long> before) {
        return StatementCounter.delta(before, StatementCounter.snapshot()).getOrDefault(LOOKUP, 0L);
    }

    @Test
    void twenty_requests_with_one_key_cost_one_lookup_and_a_revocation_here_refuses_the_next_at_once() {
        String[] tenantKey = newTenantKey();
        Map<String, Long> before = StatementCounter.snapshot();
        for (int i = 0; i < 20; i++) {
            assertEquals(404, get(app, tenantKey[2]), "an unknown session of a known tenant");
        }
        assertEquals(
                1,
                lookups(before),
                StatementCounter.delta(before, StatementCounter.snapshot()).toString());

        revoke(tenantKey);
        assertEquals(401, get(app, tenantKey[2]), "refused by the instance that revoked it, at once");
        assertEquals(2, lookups(before), "the revoked key is looked up again, and found revoked");
    }

    @Test
    void another_instance_refuses_a_revoked_key_within_its_cache_period() {
        String[] tenantKey = newTenantKey();
        assertEquals(404, get(other, tenantKey[2]));
        revoke(tenantKey);
        await().atMost(OTHER_INSTANCE_PERIOD.plusSeconds(2))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> get(other, tenantKey[2]) == 401);
    }

    /**
     * A lookup that read the key live before the revocation committed, and is still on its way when the revocation
     * returns, does not leave the key trusted here: the next request is refused.
     */
    @Test
    void a_lookup_that_read_the_key_before_the_revocation_does_not_let_the_next_request_in() throws Exception {
        String[] tenantKey = newTenantKey();
        LookupGate.GATE.close();
        CompletableFuture<Integer> early;
        try {
            early = CompletableFuture.supplyAsync(() -> get(app, tenantKey[2]));
            await().atMost(Duration.ofSeconds(10)).until(() -> LookupGate.GATE.waiting() == 1);
            revoke(tenantKey);
        } finally {
            LookupGate.GATE.open();
        }
        assertEquals(404, early.get(10, TimeUnit.SECONDS), "it started before the revocation: let in");
        assertEquals(401, get(app, tenantKey[2]), "the next request, after the revocation returned");
    }
}
