package dev.settle.e2e;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * What the quickstart shows a newcomer: one progress line per component, then the banner, which stays on screen
 * (nothing at INFO on the console); and what it keeps in its log file under the data directory: INFO lines of
 * each service, each with its own name.
 */
final class QuickstartConsole {
    /** Everything the console shows from the start until the shutdown, on a screen and a half. */
    static final int MAX_LINES = 60;
    /** Lines the console may show below the banner while the quickstart answers a burst. */
    static final int MAX_LINES_AFTER_BANNER = 3;
    /** The log file under the data directory. */
    static final String LOG_FILE = "logs/settle.log";

    static final List<String> COMPONENTS =
            List.of("database (MariaDB ", "broker (Kafka ", "ingest-api", "debounce-worker", "agent-worker");
    static final List<String> SERVICES = List.of("ingest-api", "debounce-worker", "agent-worker");
    private static final Pattern PROGRESS = Pattern.compile("^  [✓+] (.+?) +\\d+\\.\\d s$");
    private static final Pattern INFO = Pattern.compile("\\bINFO\\b");
    private static final String BANNER_END = "==============================================================";

    private QuickstartConsole() {}

    /** Progress lines for every component, in start order, each with its time, all before the banner. */
    static void assertProgressThenBanner(String console) {
        List<String> lines = console.lines().toList();
        int banner = indexOf(lines, QuickstartProcess.BANNER);
        assertTrue(banner > 0, "no banner:\n" + console);
        List<String> progress = lines.subList(0, banner).stream()
                .map(PROGRESS::matcher)
                .filter(Matcher::matches)
                .map(m -> m.group(1))
                .toList();
        assertEquals(COMPONENTS.size(), progress.size(), "progress lines " + progress + " in:\n" + console);
        for (int i = 0; i < COMPONENTS.size(); i++) {
            assertTrue(progress.get(i).startsWith(COMPONENTS.get(i)), "progress lines " + progress);
        }
    }

    /** No INFO line, at most {@link #MAX_LINES} in all, and the banner within the last few lines. */
    static void assertQuietBelowTheBanner(String console) {
        List<String> lines = console.lines().toList();
        List<String> info = lines.stream().filter(l -> INFO.matcher(l).find()).toList();
        assertEquals(List.of(), info.stream().limit(5).toList(), "INFO lines on the console");
        assertTrue(lines.size() <= MAX_LINES, lines.size() + " lines on the console:\n" + console);
        int end = lines.lastIndexOf(BANNER_END);
        assertTrue(end > 0, "no end of the banner:\n" + console);
        List<String> below = lines.subList(end + 1, lines.size());
        assertTrue(
                below.size() <= MAX_LINES_AFTER_BANNER,
                below.size() + " lines below the banner: " + below + "\nin:\n" + console);
        assertTrue(console.contains("Log:     " + "/"), "the banner names the log file:\n" + console);
    }

    /**
     * The log file exists under {@code dataDir}, is named in the banner, and holds INFO lines of each service
     * with its own name; no line of one service's code carries another's name.
     */
    static void assertLogFileNamesEachService(String console, Path dataDir) throws IOException {
        Path file = dataDir.resolve(LOG_FILE);
        assertTrue(Files.isRegularFile(file), file + " does not exist");
        assertTrue(console.contains("Log:     " + file + " "), "the banner does not name " + file);
        List<String> log = Files.readAllLines(file);
        for (String service : SERVICES) {
            assertTrue(
                    log.stream().anyMatch(l -> INFO.matcher(l).find() && l.contains("[" + service + "]")),
                    "no INFO line of " + service + " in " + file);
        }
        assertOwnName(log, "ingest", "ingest-api");
        assertOwnName(log, "debounce", "debounce-worker");
        assertOwnName(log, "agent", "agent-worker");
    }

    /**
     * Every line logged by the classes of {@code dev.settle.<module>} (as Boot prints logger names: abbreviated
     * from the left, e.g. {@code d.s.agent.}) names {@code service}; there is at least one (its start).
     */
    private static void assertOwnName(List<String> log, String module, String service) {
        Pattern logger = Pattern.compile("\\s(d|dev)\\.(s|settle)\\." + module + "\\.");
        List<String> own = log.stream().filter(l -> logger.matcher(l).find()).toList();
        assertFalse(
                own.isEmpty(),
                "no line of dev.settle." + module + " in the log; lines of " + service + ":\n"
                        + String.join(
                                "\n",
                                log.stream()
                                        .filter(l -> l.contains("[" + service + "]"))
                                        .limit(20)
                                        .toList()));
        List<String> misnamed = own.stream()
                .filter(l -> !l.contains("[" + service + "]"))
                .limit(3)
                .toList();
        assertEquals(List.of(), misnamed, "lines of " + service + "'s classes without its name");
    }

    private static int indexOf(List<String> lines, String part) {
        for (int i = 0; i < lines.size(); i++) {
            if (lines.get(i).contains(part)) {
                return i;
            }
        }
        return -1;
    }
}
