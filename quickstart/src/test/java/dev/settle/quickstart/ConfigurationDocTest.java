package dev.settle.quickstart;

import org.junit.jupiter.api.Test;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.InputStream;
import java.net.URL;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docs/CONFIGURATION.md against the configuration metadata that Spring Boot's configuration processor writes from
 * the settings classes ({@code META-INF/spring-configuration-metadata.json} of each application): every
 * {@code settle.*} property an application binds has a row in that application's section, with an environment
 * spelling that relaxed binding accepts, the type and the code's default; and no row names a property the application does
 * not bind. A default cell starting with a value in backticks states the code's default; where the code has none,
 * the cell must not start with one.
 */
class ConfigurationDocTest {
    static final Path DOC =
            Path.of("..", "docs", "CONFIGURATION.md").toAbsolutePath().normalize();
    static final List<String> SERVICES = List.of("ingest-api", "debounce-worker", "agent-worker");
    /**
     * Modules whose settings more than one service binds: the schema module's debounce timing
     * ({@code DebounceTiming}) is enabled by the debounce worker and by the agent.
     */
    static final Map<String, List<String>> SHARED = Map.of("schema", List.of("debounce-worker", "agent-worker"));
    /** {@code | `settle.x` | `SETTLE_X` | type | default | meaning |} */
    static final Pattern ROW =
            Pattern.compile("^\\|\\s*`(settle\\.[^`]+)`\\s*\\|\\s*`([^`]+)`\\s*\\|([^|]*)\\|(.*)\\|(.*)\\|\\s*$");

    static final Pattern LEADING_VALUE = Pattern.compile("^`([^`]*)`");
    static final Map<String, String> TYPES = Map.of(
            "java.lang.String", "string",
            "java.lang.Integer", "integer",
            "java.lang.Long", "integer",
            "java.lang.Double", "number",
            "java.lang.Boolean", "boolean",
            "java.time.Duration", "duration",
            "java.util.List<java.time.Duration>", "list of durations");

    record Setting(String name, String type, String defaultValue) {}

    record Row(String environment, String type, String defaultCell) {}

    @Test
    void every_setting_of_every_service_is_documented_with_its_environment_name_type_and_default() throws IOException {
        Map<String, Map<String, Setting>> metadata = metadata();
        assertEquals(SERVICES, new ArrayList<>(metadata.keySet()), "configuration metadata found for");
        Map<String, Map<String, Row>> doc = documented(Files.readAllLines(DOC));

        List<String> problems = new ArrayList<>();
        metadata.forEach((service, settings) -> {
            Map<String, Row> rows = doc.getOrDefault(service, Map.of());
            settings.values().forEach(setting -> {
                Row row = rows.get(setting.name());
                if (row == null) {
                    problems.add(service + ": " + setting.name() + " is not documented");
                    return;
                }
                String environment = environmentName(setting.name());
                if (!environment.equals(row.environment())
                        && !legacyEnvironmentName(setting.name()).equals(row.environment())) {
                    problems.add(service + ": " + setting.name() + " is " + environment + " in the environment, not "
                            + row.environment());
                }
                String type = TYPES.get(setting.type());
                if (type == null) {
                    problems.add(
                            service + ": " + setting.name() + " has type " + setting.type() + ", unknown to this test");
                } else if (!type.equals(row.type())) {
                    problems.add(service + ": " + setting.name() + " is a " + type + ", documented as " + row.type());
                }
                Matcher value = LEADING_VALUE.matcher(row.defaultCell());
                if (setting.defaultValue() == null && value.find()) {
                    problems.add(service + ": " + setting.name() + " has no default in the code, documented as `"
                            + value.group(1) + "`");
                } else if (setting.defaultValue() != null
                        && !(value.find() && value.group(1).equals(setting.defaultValue()))) {
                    problems.add(service + ": " + setting.name() + " defaults to `" + setting.defaultValue()
                            + "` in the code, documented as " + row.defaultCell());
                }
            });
            rows.keySet().stream()
                    .filter(name -> !settings.containsKey(name))
                    .forEach(name -> problems.add(service + ": documents " + name + ", which it does not bind"));
        });
        doc.keySet().stream()
                .filter(section -> !metadata.containsKey(section))
                .forEach(section -> problems.add("section " + section + " documents settings of no service"));
        assertTrue(problems.isEmpty(), DOC + ":\n" + String.join("\n", problems));
    }

    @Test
    void the_environment_name_is_the_relaxed_binding_of_the_property() {
        assertEquals("SETTLE_DEBOUNCE_WINDOW", environmentName("settle.debounce.window"));
        assertEquals("SETTLE_AGENT_MAXINFLIGHT", environmentName("settle.agent.max-in-flight"));
        assertEquals("SETTLE_LIMITS_UNANSWEREDRETRYAFTER", environmentName("settle.limits.unanswered-retry-after"));
        assertEquals("SETTLE_API_KEY", legacyEnvironmentName("settle.api-key"));
    }

    @Test
    void a_missing_row_or_a_wrong_default_is_found() {
        Map<String, Map<String, Row>> doc = documented(List.of(
                "## debounce-worker",
                "| property | environment | type | default | meaning |",
                "|---|---|---|---|---|",
                "| `settle.debounce.window` | `SETTLE_DEBOUNCE_WINDOW` | duration | `2s` | quiet time |",
                "| `settle.sweeper.grace` | `SETTLE_SWEEPER_GRACE` | duration | unset | grace |"));
        assertEquals(
                Map.of(
                        "debounce-worker",
                        Map.of(
                                "settle.debounce.window", new Row("SETTLE_DEBOUNCE_WINDOW", "duration", "`2s`"),
                                "settle.sweeper.grace", new Row("SETTLE_SWEEPER_GRACE", "duration", "unset"))),
                doc);
    }

    /** Spring Boot's relaxed binding: capitals, dots as underscores, dashes dropped. */
    static String environmentName(String property) {
        return property.replace("-", "").replace('.', '_').toUpperCase(Locale.ROOT);
    }

    /** The other spelling Spring Boot's environment binding accepts: dashes as underscores ({@code SETTLE_API_KEY}). */
    static String legacyEnvironmentName(String property) {
        return property.replace('-', '_').replace('.', '_').toUpperCase(Locale.ROOT);
    }

    /** The rows of each {@code ## service} section of the document. */
    static Map<String, Map<String, Row>> documented(List<String> lines) {
        Map<String, Map<String, Row>> sections = new LinkedHashMap<>();
        String section = null;
        for (String line : lines) {
            if (line.startsWith("## ")) {
                section = line.substring(3).trim();
                continue;
            }
            Matcher row = ROW.matcher(line);
            if (row.matches()) {
                Row previous = sections.computeIfAbsent(section, s -> new TreeMap<>())
                        .put(
                                row.group(1),
                                new Row(
                                        row.group(2),
                                        row.group(3).trim(),
                                        row.group(4).trim()));
                assertEquals(null, previous, section + ": " + row.group(1) + " is documented twice");
            }
        }
        return sections;
    }

    /** Each service's {@code settle.*} settings, from the metadata in its jar (or target/classes) on this classpath. */
    static Map<String, Map<String, Setting>> metadata() throws IOException {
        Map<String, Map<String, Setting>> services = new TreeMap<>((a, b) -> SERVICES.indexOf(a) - SERVICES.indexOf(b));
        JsonMapper json = JsonMapper.builder().build();
        for (URL url : Collections.list(ConfigurationDocTest.class
                .getClassLoader()
                .getResources("META-INF/spring-configuration-metadata.json"))) {
            JsonNode root;
            try (InputStream in = url.openStream()) {
                root = json.readTree(in);
            }
            Map<String, Setting> settings = new TreeMap<>();
            for (JsonNode property : root.path("properties")) {
                String name = property.path("name").asString();
                if (name.startsWith("settle.")) {
                    settings.put(
                            name,
                            new Setting(
                                    name,
                                    property.path("type").asString(),
                                    defaultValue(property.get("defaultValue"))));
                }
            }
            if (settings.isEmpty()) {
                continue; // Spring Boot's own metadata
            }
            // the module's target/classes in the reactor, or its jar settle-<service>-<version>.jar
            List<String> modules = java.util.stream.Stream.concat(SERVICES.stream(), SHARED.keySet().stream())
                    .filter(m -> url.toString().contains("/" + m + "/target/classes/")
                            || url.toString().contains("/settle-" + m + "-"))
                    .toList();
            assertEquals(1, modules.size(), "which module's metadata is " + url);
            for (String service : SHARED.getOrDefault(modules.get(0), List.of(modules.get(0)))) {
                Map<String, Setting> bound = services.computeIfAbsent(service, k -> new TreeMap<>());
                settings.forEach((name, setting) -> assertEquals(
                        null, bound.put(name, setting), "two metadata files of " + service + " declare " + name));
            }
        }
        return services;
    }

    /** The metadata's default as the document writes it: a list as {@code a,b,c}. */
    static String defaultValue(JsonNode value) {
        if (value == null || value.isNull()) {
            return null;
        }
        if (value.isArray()) {
            List<String> items = new ArrayList<>();
            value.forEach(item -> items.add(item.asString()));
            return String.join(",", items);
        }
        String text = value.asString();
        if (text.startsWith("[") && text.endsWith("]")) { // a @DefaultValue list, written as its toString()
            return text.substring(1, text.length() - 1).replace(" ", "");
        }
        return text;
    }
}
