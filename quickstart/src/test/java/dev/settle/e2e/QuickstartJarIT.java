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

import static org.awaitility.Awaitility.await;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The README's run command, for real: the packaged {@code quickstart/target/settle-quickstart.jar} started with
 * {@code java -jar}, {@code java} from the PATH (after {@code package}; run by failsafe in {@code mvn -B verify}; on
 * the build machines that {@code java} is 17, so the jar's entry point relaunches it with a JDK 21+), configured only
 * by the environment, answers a burst of two messages with one reply, and stops on SIGTERM. Every other end-to-end test
 * starts the quickstart from the test class path; this one catches what only the fat jar can break (its layout,
 * its manifest, resources and services that the repackaging drops), and checks what its console shows
 * ({@link QuickstartConsole}).
 */
class QuickstartJarIT {
    static final Duration START = Duration.ofMinutes(3);
    static final Duration ANSWER = Duration.ofMinutes(1);
    static final Duration STOP = Duration.ofMinutes(2);
    /** The quickstart's default key: the environment below does not set SETTLE_API_KEY. */
    static final String DEFAULT_KEY = "dev-key";

    Path logs;
    Path tmp;

    @BeforeEach
    void freshDirectories() throws IOException {
        logs = Files.createDirectories(
                Path.of("target", "quickstart-jar-" + UUID.randomUUID()).toAbsolutePath());
        tmp = Files.createTempDirectory("settle-jar-"); // a short path: MariaDB's socket goes there
    }

    @AfterEach
    void nothingOutlivesTheTest() throws IOException {
        EmbeddedMariaDb.stopLeftoverServer(mariaDbHome());
        FileSystemUtils.deleteRecursively(tmp);
    }

    @Test
    void java_jar_answers_a_burst_of_two_with_one_reply_and_sigterm_stops_it() throws Exception {
        assertTrue(Runtime.version().feature() >= 21, "the toolchain's JDK runs this test: " + Runtime.version());
        String jarProperty = System.getProperty("settle.quickstart.jar");
        assertNotNull(jarProperty, "settle.quickstart.jar is set by the failsafe configuration in quickstart/pom.xml");
        Path jar = Path.of(jarProperty);
        assertTrue(Files.isRegularFile(jar), jar + " does not exist: failsafe runs after package");

        int port = FreePort.find();
        int managementPort = FreePort.find();
        Map<String, String> env = Map.of(
                "SETTLE_DATADIR", tmp.resolve("data").toString(),
                "SERVER_PORT", Integer.toString(port),
                "SETTLE_MANAGEMENT_PORT", Integer.toString(managementPort),
                "SETTLE_DEBOUNCE_PORT", Integer.toString(FreePort.find()),
                "SETTLE_AGENT_PORT", Integer.toString(FreePort.find()),
                "SETTLE_DEBOUNCE_WINDOW", "3s"); // both POSTs land well inside it, even on a loaded machine
        ApiClient api = new ApiClient("http://127.0.0.1:" + port, DEFAULT_KEY);
        String session = "jar-" + UUID.randomUUID();

        // `java` as the README's command finds it on the PATH: on a machine whose java is 17, the jar finds a JDK 21+
        int pathJava = PathJava.feature();
        try (QuickstartProcess quickstart =
                QuickstartProcess.jar("java", jar, env, logs.resolve("quickstart.log"), tmp)) {
            try {
                quickstart.awaitBanner(START);
                assertEquals(
                        pathJava < 21,
                        quickstart.output().contains("is too old for Settle; running it with "),
                        "the PATH's java is " + pathJava + "; relaunched with a JDK 21+ exactly when it is older");
                assertTrue(
                        quickstart.output().contains("API key: " + DEFAULT_KEY + "\n"),
                        "banner without the default key");
                assertTrue(
                        quickstart.output().contains("Open http://localhost:" + port + "/ in a browser"),
                        "banner without the chat page");
                assertTrue(
                        api.raw("http://127.0.0.1:" + port + "/").contains("<script type=\"module\" src=\"chat.js\">"),
                        "the jar serves no chat page at /");
                assertTrue(
                        quickstart.output().contains("Model:   offline demo model"),
                        "banner without the offline model");
                assertTrue(
                        quickstart.output().contains("ingest-api http://localhost:" + managementPort + ","),
                        "banner without the management port");
                // actuator on the management port only: the API port has none of it
                assertTrue(api.raw("http://127.0.0.1:" + managementPort + "/actuator/health/readiness")
                        .contains("\"UP\""));
                assertTrue(api.raw("http://127.0.0.1:" + managementPort + "/actuator/prometheus")
                        .contains("settle_"));
                assertEquals(404, api.status("http://127.0.0.1:" + port + "/actuator/prometheus"));

                assertEquals(1, api.post(session, "lunch 35").get("version").asLong());
                assertEquals(
                        2, api.post(session, "and coffee 12").get("version").asLong());

                await("an assistant reply in " + session)
                        .atMost(ANSWER)
                        .pollInterval(Duration.ofMillis(20))
                        .pollInSameThread()
                        .until(() -> !api.messages(session, "assistant").isEmpty());
                await(session + " idle")
                        .atMost(ANSWER)
                        .pollInterval(Duration.ofMillis(20))
                        .pollInSameThread()
                        .until(() ->
                                "idle".equals(api.session(session).get("state").asString()));
                List<JsonNode> replies = api.messages(session, "assistant");
                assertEquals(1, replies.size(), "replies: " + replies);
                assertEquals(2, replies.getFirst().get("coversVersion").asLong());
                assertEquals(
                        "(offline demo model) Done: booked 35.00 under food; booked 12.00 under coffee.",
                        replies.getFirst().get("text").asString());
                assertEquals(2, api.session(session).get("repliedVersion").asLong());
                String console = quickstart.output();
                QuickstartConsole.assertProgressThenBanner(console);
                QuickstartConsole.assertQuietBelowTheBanner(console);
                QuickstartConsole.assertLogFileNamesEachService(console, tmp.resolve("data"));

                Integer exit = quickstart.terminate(STOP);
                assertNotNull(exit, "still running " + STOP + " after SIGTERM");
                // a JVM ended by SIGTERM exits with 128 + 15 once its shutdown hooks have run
                assertEquals(143, exit, "exit code");
                String output = quickstart.output();
                int shutdown = output.indexOf("[settle-quickstart] shutting down");
                assertTrue(shutdown >= 0, "no shutdown message");
                assertTrue(output.indexOf("[settle-quickstart] stopped", shutdown) > 0, "the shutdown did not finish");
                assertTrue(
                        output.lines().count() <= QuickstartConsole.MAX_LINES,
                        "more than " + QuickstartConsole.MAX_LINES + " lines on the console");
                assertEquals(
                        List.of(),
                        EmbeddedMariaDb.serversOn(mariaDbHome()),
                        "MariaDB still running after the shutdown");
            } catch (Throwable failure) {
                throw withOutput(failure, quickstart);
            }
        }
    }

    /** The failure, with the quickstart's own output (its last lines; the whole of it in the log file) attached. */
    private static AssertionError withOutput(Throwable failure, QuickstartProcess quickstart) {
        List<String> lines = quickstart.output().lines().toList();
        List<String> tail = lines.subList(Math.max(0, lines.size() - 200), lines.size());
        System.err.println("---- output of java -jar settle-quickstart.jar (" + quickstart.log + ") ----");
        lines.forEach(System.err::println);
        System.err.println("---- end of the quickstart's output ----");
        return new AssertionError(
                failure.getMessage() + "\n---- last " + tail.size() + " lines of " + quickstart.log + " ----\n"
                        + String.join("\n", tail),
                failure);
    }

    private Path mariaDbHome() {
        return tmp.resolve("data").resolve("mariadb");
    }
}
