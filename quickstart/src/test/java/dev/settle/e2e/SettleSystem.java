package dev.settle.e2e;

import dev.settle.quickstart.QuickstartPage;
import dev.settle.quickstart.SettleLauncher;
import dev.settle.testsupport.ModelDouble;
import dev.settle.testsupport.SharedInfra;
import dev.settle.testsupport.SqlTrace;
import dev.settle.testsupport.WebhookReceiver;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The whole of Settle for end-to-end tests: ingest API, debounce worker and agent worker(s) started for real
 * on a fresh database of the shared MariaDB and the shared broker (or a broker of the test's own), talking to the HTTP model double and
 * delivering to a real webhook receiver. Timings are scaled down (window 400 ms, max-wait 4 s, lease TTL 3 s).
 */
public final class SettleSystem implements AutoCloseable {
    public static final String KEY = "e2e-key";
    public static final String SECRET = "whsec_cInLi1ITi1drPLvrjsLAyhW8oE7SQ4DJrHYkDnmZdiI=";
    public static final Duration WINDOW = Duration.ofMillis(400);
    public static final Duration MAX_WAIT = Duration.ofMillis(4000);
    public static final Duration LEASE_TTL = Duration.ofSeconds(3);
    static final JsonMapper JSON = JsonMapper.builder().build();

    public final ModelDouble model = ModelDouble.start();
    public final WebhookReceiver receiver = WebhookReceiver.start();
    public final SettleLauncher launcher;
    public final ConfigurableApplicationContext ingest;
    public final ConfigurableApplicationContext debounce;
    public final ConfigurableApplicationContext agent;
    public final JdbcTemplate jdbc;
    private final String base;
    private final HttpApi api;
    private final HttpClient http = HttpClient.newHttpClient();

    public SettleSystem(String hint) {
        this(hint, true);
    }

    /** @param withAgent false to start without an agent worker (a test adds its own) */
    public SettleSystem(String hint, boolean withAgent) {
        this(hint, withAgent, Map.of());
    }

    /** @param extra properties every application gets, over the defaults of this system */
    public SettleSystem(String hint, boolean withAgent, Map<String, Object> extra) {
        this(hint, withAgent, extra, null);
    }

    /**
     * @param extra properties every application gets, over the defaults of this system
     * @param kafkaBootstrap the broker every application (and {@link AgentProcess} given
     *                       {@link #sharedProperties()}) uses; null for the broker shared by the test JVM
     */
    public SettleSystem(String hint, boolean withAgent, Map<String, Object> extra, String kafkaBootstrap) {
        this(hint, withAgent, extra, kafkaBootstrap, false);
    }

    /** A system whose ingest API serves the quickstart's chat page ({@link QuickstartPage}), as the quickstart's does. */
    public static SettleSystem withPage(String hint, Map<String, Object> extra) {
        return new SettleSystem(hint, true, extra, null, true);
    }

    /**
     * A system whose three applications send their statements through {@link SqlTrace}, each booked to its
     * application's name ({@code ingest-api}, {@code debounce-worker}, {@code agent-worker}).
     */
    public static SettleSystem traced(String hint, Map<String, Object> extra) {
        return new SettleSystem(hint, true, extra, null, false, true);
    }

    private SettleSystem(
            String hint, boolean withAgent, Map<String, Object> extra, String kafkaBootstrap, boolean page) {
        this(hint, withAgent, extra, kafkaBootstrap, page, false);
    }

    private SettleSystem(
            String hint,
            boolean withAgent,
            Map<String, Object> extra,
            String kafkaBootstrap,
            boolean page,
            boolean traced) {
        Map<String, Object> shared = new HashMap<>();
        String url = SharedInfra.newDatabase(hint);
        shared.put("spring.datasource.url", url);
        shared.put(
                "spring.kafka.bootstrap-servers",
                kafkaBootstrap != null ? kafkaBootstrap : SharedInfra.kafkaBootstrap());
        shared.put("settle.api-key", KEY);
        shared.put("server.port", "0"); // several instances of each application share this JVM
        shared.put("settle.debounce.window", WINDOW.toMillis() + "ms");
        shared.put("settle.debounce.maxwait", MAX_WAIT.toMillis() + "ms");
        shared.put("settle.lease.ttl", LEASE_TTL.toMillis() + "ms");
        shared.put("settle.sweeper.interval", "300ms");
        shared.put("settle.sweeper.grace", "1500ms");
        shared.put("settle.llm.url", model.baseUrl());
        shared.put("settle.llm.max-attempts", "2");
        shared.put("settle.llm.backoff", "100ms");
        shared.put("settle.llm.timeout", "30s");
        shared.put("settle.webhook.url", receiver.url());
        shared.put("settle.webhook.secret", SECRET);
        shared.put("settle.webhook.schedule", "0s,200ms,200ms,200ms");
        // the receiver listens on 127.0.0.1: allow it past the SSRF guard, exactly as the quickstart does
        shared.put("settle.webhook.allowprivate", "true");
        shared.putAll(extra);
        // consumer groups unique to this system: the broker is shared with other test classes
        String group = "-" + hint + "-" + UUID.randomUUID();
        this.shared = Map.copyOf(shared);
        this.group = group;
        launcher = new SettleLauncher(shared);
        this.url = url;
        this.traced = traced;
        Map<String, Object> ingestProps = new HashMap<>(Map.of("server.port", "0"));
        ingestProps.putAll(tracedAs("ingest-api"));
        ingest = launcher.startIngestApi(page ? QuickstartPage.served(ingestProps) : ingestProps);
        // session ids of this system's schema start at a base no other system of this JVM uses: the broker and its
        // topics are shared, a new consumer group reads them from the start, and another system's events (keyed
        // by internal session id) would otherwise wake a session of this one that happens to have the same id
        ingest.getBean(JdbcTemplate.class)
                .execute("ALTER TABLE chat_session AUTO_INCREMENT = " + SESSION_ID_BLOCK * SYSTEMS.incrementAndGet());
        debounce = launcher.startDebounceWorker(
                with(Map.of("spring.kafka.consumer.group-id", "settle-debounce" + group), tracedAs("debounce-worker")));
        agent = withAgent ? startAgent() : null;
        jdbc = ingest.getBean(JdbcTemplate.class);
        base = "http://127.0.0.1:" + SettleLauncher.port(ingest);
        api = new HttpApi(base, KEY);
    }

    private final String group;
    private final Map<String, Object> shared;
    private final String url;
    private final boolean traced;

    /** The datasource URL that books an application's statements to {@code app}, when this system is traced. */
    private Map<String, Object> tracedAs(String app) {
        return traced ? Map.of("spring.datasource.url", SqlTrace.url(url, app)) : Map.of();
    }

    private static Map<String, Object> with(Map<String, Object> a, Map<String, Object> b) {
        Map<String, Object> all = new HashMap<>(a);
        all.putAll(b);
        return all;
    }

    private static final java.util.concurrent.atomic.AtomicLong SYSTEMS = new java.util.concurrent.atomic.AtomicLong();
    private static final long SESSION_ID_BLOCK = 10_000_000L;

    /** Another agent worker instance in the same consumer group. */
    public ConfigurableApplicationContext startAgent() {
        return launcher.startAgentWorker(
                with(Map.of("spring.kafka.consumer.group-id", agentGroup()), tracedAs("agent-worker")));
    }

    /**
     * Another agent worker instance in a consumer group of its own: it receives every SessionReady, as does each
     * instance already running, instead of sharing the partitions with them.
     */
    public ConfigurableApplicationContext startAgentInOwnGroup(String name) {
        return launcher.startAgentWorker(Map.of("spring.kafka.consumer.group-id", agentGroup() + "-" + name));
    }

    /** Another debounce-worker instance in the same consumer group. */
    public ConfigurableApplicationContext startDebounceWorker() {
        return launcher.startDebounceWorker(Map.of("spring.kafka.consumer.group-id", "settle-debounce" + group));
    }

    public String agentGroup() {
        return "settle-agent" + group;
    }

    /** The properties every application of this system gets. */
    public Map<String, Object> sharedProperties() {
        return shared;
    }

    public static String newSessionId() {
        return "e2e-" + UUID.randomUUID();
    }

    public JsonNode post(String sessionId, String text) {
        HttpResponse<String> r =
                send(HttpRequest.newBuilder(URI.create(base + "/v1/sessions/" + sessionId + "/messages"))
                        .header("Authorization", "Bearer " + KEY)
                        .header("Content-Type", "application/json")
                        .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(Map.of("text", text))))
                        .build());
        if (r.statusCode() != 202) {
            throw new AssertionError("POST answered " + r.statusCode() + ": " + r.body());
        }
        return JSON.readTree(r.body());
    }

    /** Says the session's user is typing ({@code POST .../typing}, no body); any answer but 202 fails the test. */
    public void typing(String sessionId) {
        HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(base + "/v1/sessions/" + sessionId + "/typing"))
                .header("Authorization", "Bearer " + KEY)
                .POST(HttpRequest.BodyPublishers.noBody())
                .build());
        if (r.statusCode() != 202) {
            throw new AssertionError("POST typing answered " + r.statusCode() + ": " + r.body());
        }
    }

    /** POSTs with an optional Idempotency-Key; never throws on a non-202. */
    public ChaosWorkload.ApiResult postWithKey(String sessionId, String text, String idempotencyKey) {
        return api.post(sessionId, text, idempotencyKey);
    }

    /** POSTs and returns the raw status (for refusals). */
    public int postStatus(String sessionId, String text) {
        return postRaw(sessionId, text).statusCode();
    }

    /** POSTs and returns the whole response, whatever its status. */
    public HttpResponse<String> postRaw(String sessionId, String text) {
        return send(HttpRequest.newBuilder(URI.create(base + "/v1/sessions/" + sessionId + "/messages"))
                .header("Authorization", "Bearer " + KEY)
                .header("Content-Type", "application/json")
                .POST(HttpRequest.BodyPublishers.ofString(JSON.writeValueAsString(Map.of("text", text))))
                .build());
    }

    /** POSTs an empty body to {@code path}; returns the status. */
    public int postPath(String path) {
        return api.postPath(path);
    }

    public JsonNode put(String path, String json) {
        HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(base + path))
                .header("Authorization", "Bearer " + KEY)
                .header("Content-Type", "application/json")
                .PUT(HttpRequest.BodyPublishers.ofString(json))
                .build());
        if (r.statusCode() != 200) {
            throw new AssertionError("PUT answered " + r.statusCode() + ": " + r.body());
        }
        return JSON.readTree(r.body());
    }

    /** The session as the agents see it (its row, its timer, its last turns): stuck or slow, for a failure message. */
    String sessionState(String s) {
        StringBuilder sb = new StringBuilder("session ").append(s).append(" at ");
        try {
            sb.append(jdbc.queryForObject("SELECT UTC_TIMESTAMP(6)", String.class));
            jdbc.queryForList("""
                    SELECT id, version, replied_version, failed_version, oldest_unanswered_at, last_message_at,
                           lease_token, lease_epoch, lease_expires_at
                      FROM chat_session WHERE external_id = ?""", s).forEach(row -> sb.append("\n  session ").append(row));
            jdbc.queryForList("""
                    SELECT d.* FROM debounce_timer d JOIN chat_session s ON s.id = d.session_id
                     WHERE s.external_id = ?""", s).forEach(row -> sb.append("\n  timer ").append(row));
            jdbc.queryForList("""
                    SELECT b.* FROM session_burst b JOIN chat_session s ON s.id = b.session_id
                     WHERE s.external_id = ?""", s).forEach(row -> sb.append("\n  burst ").append(row));
            jdbc.queryForList("""
                    SELECT t.id, t.state, t.from_version, t.to_version, t.lease_epoch, t.reason, t.started_at, t.ended_at
                      FROM chat_turn t JOIN chat_session s ON s.id = t.session_id
                     WHERE s.external_id = ? ORDER BY t.id DESC LIMIT 8""", s).forEach(row -> sb.append("\n  turn ").append(row));
        } catch (RuntimeException e) {
            sb.append("\n  (state unreadable: ").append(e).append(')');
        }
        return sb.toString();
    }

    public String baseUrl() {
        return base;
    }

    public JsonNode get(String path) {
        HttpResponse<String> r = send(HttpRequest.newBuilder(URI.create(base + path))
                .header("Authorization", "Bearer " + KEY)
                .GET()
                .build());
        return JSON.readTree(r.body());
    }

    /**
     * A connection of its own holding every gap of ledger_entry ({@code SELECT ... FOR UPDATE} under REPEATABLE
     * READ, left open): a tool's ledger INSERT then waits inside its tool transaction until this connection rolls
     * back or closes. For tests that need a turn caught mid-tool.
     */
    public java.sql.Connection holdLedgerGaps() throws java.sql.SQLException {
        java.sql.Connection blocker =
                java.sql.DriverManager.getConnection((String) shared.get("spring.datasource.url"), "root", "");
        blocker.setAutoCommit(false);
        blocker.setTransactionIsolation(java.sql.Connection.TRANSACTION_REPEATABLE_READ);
        try (java.sql.Statement st = blocker.createStatement()) {
            st.executeQuery("SELECT * FROM ledger_entry FOR UPDATE").close();
        }
        return blocker;
    }

    public long sessionPk(String sessionId) {
        return jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, sessionId);
    }

    /** Committed replies of a session, oldest first: [covers_from, covers_version]. */
    public List<long[]> replies(String sessionId) {
        return jdbc.query("""
                SELECT m.covers_from, m.covers_version FROM chat_message m JOIN chat_session s ON s.id = m.session_id
                 WHERE s.external_id = ? AND m.role = 'assistant' ORDER BY m.id""", (rs, i) -> new long[] {rs.getLong(1), rs.getLong(2)}, sessionId);
    }

    public List<String> turnStates(String sessionId) {
        return jdbc.queryForList("""
                SELECT t.state FROM chat_turn t JOIN chat_session s ON s.id = t.session_id
                 WHERE s.external_id = ? ORDER BY t.id""", String.class, sessionId);
    }

    /**
     * Waits until nothing more can happen in this system without a new message: every MessageAccepted event
     * consumed (the debounce group's committed offsets at the topic's end), no timer armed, every session
     * answered and its lease released, no turn RUNNING, no tool execution EXECUTING, no webhook delivery
     * PENDING. "Nothing more happened" is asserted after this, not after a sleep.
     */
    public void awaitQuiescent(Duration timeout) {
        try (org.apache.kafka.clients.admin.Admin admin = org.apache.kafka.clients.admin.Admin.create(
                Map.of("bootstrap.servers", shared.get("spring.kafka.bootstrap-servers")))) {
            org.awaitility.Awaitility.await("the system is quiescent")
                    .atMost(timeout)
                    .pollInterval(Duration.ofMillis(200))
                    .until(() -> jdbc.queryForObject(QUIESCENT, Integer.class) == 0
                            && unconsumed(
                                            admin,
                                            "settle-debounce" + group,
                                            dev.settle.contracts.Topics.MESSAGE_ACCEPTED)
                                    == 0);
        }
    }

    /** Rows that mean something is still to happen: a timer, a session unanswered or leased, a turn, a tool, a delivery. */
    static final String QUIESCENT = """
            SELECT (SELECT COUNT(*) FROM debounce_timer)
                 + (SELECT COUNT(*) FROM chat_session WHERE version > replied_version OR lease_token IS NOT NULL)
                 + (SELECT COUNT(*) FROM chat_turn WHERE state = 'RUNNING')
                 + (SELECT COUNT(*) FROM tool_execution WHERE status = 'EXECUTING')
                 + (SELECT COUNT(*) FROM webhook_delivery WHERE status = 'PENDING')""";

    /** Events of {@code topic} that {@code consumerGroup} has not committed yet. */
    static long unconsumed(org.apache.kafka.clients.admin.Admin admin, String consumerGroup, String topic)
            throws Exception {
        Map<org.apache.kafka.common.TopicPartition, org.apache.kafka.clients.consumer.OffsetAndMetadata> committed =
                admin.listConsumerGroupOffsets(consumerGroup)
                        .partitionsToOffsetAndMetadata()
                        .get();
        Map<org.apache.kafka.common.TopicPartition, org.apache.kafka.clients.admin.OffsetSpec> latest = new HashMap<>();
        admin.describeTopics(List.of(topic))
                .allTopicNames()
                .get()
                .get(topic)
                .partitions()
                .forEach(p -> latest.put(
                        new org.apache.kafka.common.TopicPartition(topic, p.partition()),
                        org.apache.kafka.clients.admin.OffsetSpec.latest()));
        long behind = 0;
        for (var end : admin.listOffsets(latest).all().get().entrySet()) {
            org.apache.kafka.clients.consumer.OffsetAndMetadata at = committed.get(end.getKey());
            behind += end.getValue().offset() - (at == null ? 0 : at.offset());
        }
        return behind;
    }

    /** Webhooks the receiver acknowledged for one session. */
    public List<WebhookReceiver.Delivery> webhooks(String sessionId) {
        return receiver.acknowledged().stream()
                .filter(d -> d.json() != null
                        && sessionId.equals(
                                d.json().path("data").path("sessionId").asString()))
                .toList();
    }

    public List<WebhookReceiver.Delivery> allDeliveries(String sessionId) {
        return receiver.deliveries().stream()
                .filter(d -> d.json() != null
                        && sessionId.equals(
                                d.json().path("data").path("sessionId").asString()))
                .toList();
    }

    /** Model requests whose prompt mentions {@code marker}. */
    public long modelCallsMentioning(String marker) {
        return model.requests().stream().filter(r -> r.body().contains(marker)).count();
    }

    public static void sleep(Duration d) {
        try {
            Thread.sleep(d);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    private HttpResponse<String> send(HttpRequest request) {
        try {
            return http.send(request, HttpResponse.BodyHandlers.ofString());
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    @Override
    public void close() {
        launcher.close();
        model.close();
        receiver.close();
    }
}
