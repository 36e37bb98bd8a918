package dev.settle.e2e;

import dev.settle.agent.AgentSettings;
import dev.settle.debounce.PacingSettings;
import dev.settle.ingest.IngestSettings;
import dev.settle.schema.DebounceTiming;
import org.junit.jupiter.api.Test;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.boot.context.properties.source.ConfigurationPropertySources;
import org.springframework.boot.convert.DurationStyle;
import org.springframework.boot.jdbc.autoconfigure.DataSourceProperties;
import org.springframework.boot.kafka.autoconfigure.KafkaProperties;
import org.springframework.boot.web.server.autoconfigure.ServerProperties;
import org.springframework.core.env.StandardEnvironment;
import org.springframework.core.env.SystemEnvironmentPropertySource;
import org.yaml.snakeyaml.Yaml;

import java.io.IOException;
import java.io.Reader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static java.util.Map.entry;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * docker-compose.yml without Docker: each service's environment, interpolated as Compose would, is bound
 * the way Spring Boot binds a real process environment (relaxed names, {@link SystemEnvironmentPropertySource})
 * into the settings classes the application uses, and every variable must arrive where it is meant to.
 *
 * <p>What it cannot check: that the images pull and run, that the Kafka and database containers accept that
 * configuration, that the healthchecks pass, or that the jars were built (only that the mounted names are
 * the ones the build gives them).
 */
class DockerComposeConfigTest {
    static final Path ROOT = Path.of("..").toAbsolutePath().normalize();
    static final List<String> APPS = List.of("ingest-api", "debounce-worker", "agent-worker");
    /** {@code ${VAR}}, {@code ${VAR:-default}} and {@code ${VAR:?message}} (required: Compose stops when unset or empty). */
    static final Pattern VARIABLE = Pattern.compile("\\$\\{([A-Z0-9_]+)(?:(:-|:\\?)([^}]*))?}");

    /** A value for each host variable the file reads, distinct from every default, so that a default cannot pass for it. */
    static final Map<String, String> PROBES = Map.ofEntries(
            entry("SERVER_PORT", "18123"),
            entry("SETTLE_MANAGEMENT_PORT", "19123"),
            entry("SETTLE_API_KEY", "probe-api-key"),
            entry("SETTLE_WEBHOOK_URL", "https://hooks.probe.invalid/settle"),
            entry("SETTLE_WEBHOOK_SECRET", "whsec_cHJvYmUtc2VjcmV0LXByb2JlLXNlY3JldC1wcm9iZQ=="),
            entry("SETTLE_WEBHOOK_ALLOWUNSIGNED", "true"),
            entry("SETTLE_WEBHOOK_ALLOWPRIVATE", "true"),
            entry("SETTLE_LLM_URL", "http://llm.probe.invalid:11434/v1"),
            entry("SETTLE_LLM_MODEL", "probe-model"),
            entry("SETTLE_LLM_KEY", "probe-llm-key"),
            entry("SETTLE_DEBOUNCE_WINDOW", "1234ms"),
            entry("SETTLE_DEBOUNCE_MAXWAIT", "23s"),
            entry("SETTLE_DEBOUNCE_ADAPTIVE", "false"),
            entry("SETTLE_DEBOUNCE_MAXWINDOW", "5s"),
            entry("SETTLE_LEASE_TTL", "17s"),
            entry("SPRING_DATASOURCE_URL", "jdbc:mysql://db.probe.invalid:3306/probe?sslMode=DISABLED"),
            entry("SPRING_KAFKA_BOOTSTRAP_SERVERS", "kafka.probe.invalid:9092"),
            entry("DB_ROOT_PASSWORD", "probe-root-password"));

    /** Per application: each variable it must be given, where its value lands after binding, and how to read the text. */
    static final Map<String, Map<String, Check>> BINDS = Map.of(
            "ingest-api",
                    withSpring(Map.of(
                            "SERVER_PORT",
                                    new Check(
                                            b -> bind(b, "server", new ServerProperties())
                                                    .getPort(),
                                            Integer::valueOf),
                            "SETTLE_MANAGEMENT_PORT",
                                    new Check(
                                            b -> b.bind("settle.management.port", Integer.class)
                                                    .get(),
                                            Integer::valueOf),
                            "SETTLE_API_KEY",
                                    new Check(
                                            b -> b.bind("settle", IngestSettings.class)
                                                    .get()
                                                    .apiKey(),
                                            s -> s))),
            "debounce-worker",
                    withSpring(Map.of(
                            "SERVER_PORT",
                                    new Check(
                                            b -> bind(b, "server", new ServerProperties())
                                                    .getPort(),
                                            Integer::valueOf),
                            "SETTLE_DEBOUNCE_WINDOW",
                                    new Check(b -> debounce(b).window(), DurationStyle::detectAndParse),
                            "SETTLE_DEBOUNCE_MAXWAIT",
                                    new Check(b -> debounce(b).maxwait(), DurationStyle::detectAndParse),
                            "SETTLE_DEBOUNCE_ADAPTIVE", new Check(b -> pacing(b).adaptive(), Boolean::valueOf),
                            "SETTLE_DEBOUNCE_MAXWINDOW",
                                    new Check(b -> pacing(b).maxwindow(), DurationStyle::detectAndParse))),
            "agent-worker",
                    withSpring(Map.ofEntries(
                            entry(
                                    "SERVER_PORT",
                                    new Check(
                                            b -> bind(b, "server", new ServerProperties())
                                                    .getPort(),
                                            Integer::valueOf)),
                            entry(
                                    "SETTLE_DEBOUNCE_WINDOW",
                                    new Check(b -> debounce(b).window(), DurationStyle::detectAndParse)),
                            entry(
                                    "SETTLE_DEBOUNCE_MAXWAIT",
                                    new Check(b -> debounce(b).maxwait(), DurationStyle::detectAndParse)),
                            entry(
                                    "SETTLE_LEASE_TTL",
                                    new Check(b -> agent(b).lease().ttl(), DurationStyle::detectAndParse)),
                            entry(
                                    "SETTLE_LLM_URL",
                                    new Check(b -> agent(b).llm().url(), s -> s)),
                            entry(
                                    "SETTLE_LLM_MODEL",
                                    new Check(b -> agent(b).llm().model(), s -> s)),
                            entry(
                                    "SETTLE_LLM_KEY",
                                    new Check(b -> agent(b).llm().key(), s -> s)),
                            entry(
                                    "SETTLE_WEBHOOK_URL",
                                    new Check(b -> agent(b).webhook().url(), s -> s)),
                            entry(
                                    "SETTLE_WEBHOOK_SECRET",
                                    new Check(b -> agent(b).webhook().secret(), s -> s)),
                            entry(
                                    "SETTLE_WEBHOOK_ALLOWUNSIGNED",
                                    new Check(b -> agent(b).webhook().allowunsigned(), Boolean::valueOf)),
                            entry(
                                    "SETTLE_WEBHOOK_ALLOWPRIVATE",
                                    new Check(b -> agent(b).webhook().allowprivate(), Boolean::valueOf)))));

    record Check(Function<Binder, Object> bound, Function<String, Object> parse) {}

    @Test
    void each_service_sets_exactly_the_variables_its_application_binds_and_each_arrives_with_the_probe_value()
            throws IOException {
        for (String app : APPS) {
            Map<String, String> env = environment(app, PROBES);
            assertEquals(new TreeSet<>(BINDS.get(app).keySet()), new TreeSet<>(env.keySet()), app + " environment");
            assertBound(app, env);
        }
    }

    @Test
    void with_only_the_required_api_key_set_every_default_is_a_value_the_application_accepts() throws IOException {
        Map<String, String> host = Map.of("SETTLE_API_KEY", "change-me");
        for (String app : APPS) {
            Map<String, String> env = environment(app, host);
            assertBound(app, env);
            assertEquals(
                    "jdbc:mysql://db:3306/settle?sslMode=DISABLED&allowPublicKeyRetrieval=true",
                    env.get("SPRING_DATASOURCE_URL"),
                    app);
            assertEquals("kafka:9092", env.get("SPRING_KAFKA_BOOTSTRAP_SERVERS"), app);
        }
        assertEquals("change-me", environment("ingest-api", host).get("SETTLE_API_KEY"));
        // the file restates no application default: what the host does not set, the container does not get
        Map<String, String> agentEnv = environment("agent-worker", host);
        for (String passedThrough : List.of(
                "SETTLE_DEBOUNCE_WINDOW",
                "SETTLE_DEBOUNCE_MAXWAIT",
                "SETTLE_LEASE_TTL",
                "SETTLE_LLM_URL",
                "SETTLE_LLM_MODEL",
                "SETTLE_LLM_KEY",
                "SETTLE_WEBHOOK_URL",
                "SETTLE_WEBHOOK_SECRET",
                "SETTLE_WEBHOOK_ALLOWUNSIGNED",
                "SETTLE_WEBHOOK_ALLOWPRIVATE")) {
            assertFalse(agentEnv.containsKey(passedThrough), passedThrough + " is set without the host setting it");
        }
        // the SSRF guard stays on unless asked: webhook URLs on private addresses are refused by default
        assertEquals(false, agent(binder(agentEnv)).webhook().allowprivate());
        // and nothing goes out unsigned unless asked
        assertEquals(false, agent(binder(agentEnv)).webhook().allowunsigned());
        // a variable the host sets reaches the container as set
        assertEquals(
                "true",
                environment("agent-worker", Map.of("SETTLE_API_KEY", "k", "SETTLE_WEBHOOK_ALLOWPRIVATE", "true"))
                        .get("SETTLE_WEBHOOK_ALLOWPRIVATE"));
        // each worker's actuator is published on the port it listens on
        assertEquals(
                List.of("${SETTLE_DEBOUNCE_PORT:-8081}:8081"),
                services().get("debounce-worker").get("ports"));
        assertEquals("8081", environment("debounce-worker", Map.of()).get("SERVER_PORT"));
        assertEquals(
                List.of("${SETTLE_AGENT_PORT:-8082}:8082"),
                services().get("agent-worker").get("ports"));
        assertEquals("8082", environment("agent-worker", Map.of()).get("SERVER_PORT"));
    }

    @Test
    void each_application_runs_its_own_executable_jar_on_java_21_after_the_database_and_kafka_are_healthy()
            throws IOException {
        Map<String, Map<String, Object>> services = services();
        assertTrue(services.get("kafka").containsKey("healthcheck"));
        assertTrue(services.get("db").containsKey("healthcheck"));
        String version = projectVersion();
        for (String app : APPS) {
            Map<String, Object> service = services.get(app);
            assertEquals("eclipse-temurin:21-jre", service.get("image"), app);
            assertEquals(
                    List.of("./" + app + "/target/settle-" + app + "-" + version + "-exec.jar:/app/app.jar:ro"),
                    service.get("volumes"),
                    app);
            assertEquals(List.of("java", "-jar", "/app/app.jar"), service.get("command"), app);
            assertEquals(
                    Map.of(
                            "db",
                            Map.of("condition", "service_healthy"),
                            "kafka",
                            Map.of("condition", "service_healthy")),
                    service.get("depends_on"),
                    app);
            assertTrue(
                    Files.readString(ROOT.resolve(app).resolve("pom.xml")).contains("<classifier>exec</classifier>"),
                    app + " builds an -exec jar");
        }
    }

    /**
     * The default database is MariaDB 11.4 (what every test here runs on); docker-compose.mysql.yml swaps in MySQL 8.4
     * under the same service name, so the services' JDBC URL and password variable stay the same. Compose merges the
     * override into the base: it may touch only the database service, and its image, credentials, data volume and
     * healthcheck must all be MySQL's.
     */
    @Test
    void the_database_is_mariadb_11_4_and_the_mysql_override_swaps_in_mysql_8_4_under_the_same_name()
            throws IOException {
        Map<String, Object> db = services().get("db");
        assertEquals("mariadb:11.4", db.get("image"));
        assertEquals("settle", env(db).get("MARIADB_DATABASE"));
        assertEquals("${DB_ROOT_PASSWORD:-settle}", env(db).get("MARIADB_ROOT_PASSWORD"));
        assertEquals(List.of("mariadb-data:/var/lib/mysql"), db.get("volumes"));
        assertEquals(
                List.of("CMD", "healthcheck.sh", "--connect", "--innodb_initialized"),
                healthcheck(db).get("test"));

        Map<String, Map<String, Object>> override = services("docker-compose.mysql.yml");
        assertEquals(java.util.Set.of("db"), override.keySet(), "the override changes only the database");
        Map<String, Object> mysql = override.get("db");
        assertEquals("mysql:8.4", mysql.get("image"));
        assertEquals("settle", env(mysql).get("MYSQL_DATABASE"));
        assertEquals("${DB_ROOT_PASSWORD:-settle}", env(mysql).get("MYSQL_ROOT_PASSWORD"));
        // Compose replaces a mount by its target: MySQL gets its own volume, never MariaDB's data directory
        assertEquals(List.of("mysql-data:/var/lib/mysql"), mysql.get("volumes"));
        assertTrue(
                String.valueOf(healthcheck(mysql).get("test")).contains("mysqladmin ping"),
                "MySQL has no healthcheck.sh");
        // the same password variable reaches every service in both set-ups
        for (String app : APPS) {
            assertEquals(
                    "${DB_ROOT_PASSWORD:-settle}", env(services().get(app)).get("SPRING_DATASOURCE_PASSWORD"), app);
        }
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Object> healthcheck(Map<String, Object> service) {
        return (Map<String, Object>) service.get("healthcheck");
    }

    /** ingest-api refuses to start without a key, so the file has no default for it: Compose itself stops first. */
    @Test
    void without_settle_api_key_compose_refuses_to_start_the_ingest_api() throws IOException {
        for (Map<String, String> host : List.of(Map.<String, String>of(), Map.of("SETTLE_API_KEY", ""))) {
            IllegalStateException refused = org.junit.jupiter.api.Assertions.assertThrows(
                    IllegalStateException.class, () -> environment("ingest-api", host));
            assertEquals("SETTLE_API_KEY: set SETTLE_API_KEY", refused.getMessage());
        }
        assertEquals(
                "${SETTLE_API_KEY:?set SETTLE_API_KEY}",
                env(services().get("ingest-api")).get("SETTLE_API_KEY"));
    }

    /**
     * Compose's own validation, where a Compose is installed ({@code docker compose} plugin or
     * {@code docker-compose}); skipped with the reason printed otherwise. Needs no Docker engine.
     */
    @Test
    void compose_itself_accepts_the_file_where_it_is_installed() throws Exception {
        List<List<String>> candidates = List.of(List.of("docker", "compose"), List.of("docker-compose"));
        for (List<String> compose : candidates) {
            List<String> version = new java.util.ArrayList<>(compose);
            version.add("version");
            try {
                Process probe =
                        new ProcessBuilder(version).redirectErrorStream(true).start();
                probe.getInputStream().readAllBytes();
                if (probe.waitFor() != 0) {
                    continue; // e.g. a docker CLI without the compose plugin
                }
            } catch (IOException notInstalled) {
                continue;
            }
            for (List<String> files :
                    List.of(List.of("docker-compose.yml"), List.of("docker-compose.yml", "docker-compose.mysql.yml"))) {
                List<String> command = new java.util.ArrayList<>(compose);
                files.forEach(f -> command.addAll(List.of("-f", ROOT.resolve(f).toString())));
                command.addAll(List.of("config", "-q"));
                ProcessBuilder builder = new ProcessBuilder(command).redirectErrorStream(true);
                builder.environment().put("SETTLE_API_KEY", "change-me"); // required: the file gives it no default
                Process p = builder.start();
                String output = new String(p.getInputStream().readAllBytes());
                int exit = p.waitFor();
                System.out.println("DockerComposeConfigTest: " + String.join(" ", command) + " exited " + exit);
                assertEquals(0, exit, String.join(" ", command) + ":\n" + output);
            }
            return;
        }
        String reason =
                "no Compose installed (neither `docker compose` nor `docker-compose`): only the parsing checks ran";
        System.out.println("DockerComposeConfigTest: " + reason);
        org.junit.jupiter.api.Assumptions.abort(reason);
    }

    /** Binds the environment as Spring Boot binds a process's and compares each value with where it landed. */
    private static void assertBound(String app, Map<String, String> env) {
        Binder binder = binder(env);
        env.forEach((name, value) -> {
            Check check = BINDS.get(app).get(name);
            assertNotNull(check, app + " sets " + name + ", which it does not bind");
            assertEquals(check.parse().apply(value), check.bound().apply(binder), app + ": " + name + "=" + value);
        });
    }

    /** A process environment as Spring Boot binds it. */
    private static Binder binder(Map<String, String> env) {
        return new Binder(ConfigurationPropertySources.from(new SystemEnvironmentPropertySource(
                StandardEnvironment.SYSTEM_ENVIRONMENT_PROPERTY_SOURCE_NAME, new HashMap<>(env))));
    }

    /**
     * A service's environment after interpolation, as Compose does it: {@code ${VAR}}, {@code ${VAR:-default}} (the
     * default when unset or empty), {@code ${VAR:?message}} (an error when unset or empty), and a variable listed
     * without a value (the host's value when set there; else the container does not get it, and the application's
     * own default applies).
     */
    private static Map<String, String> environment(String service, Map<String, String> host) throws IOException {
        Map<String, String> env = new LinkedHashMap<>();
        env(services().get(service)).forEach((name, value) -> {
            if (value == null) { // listed without a value: passed through from the host when set there, else unset
                if (host.containsKey(name)) {
                    env.put(name, host.get(name));
                }
                return;
            }
            Matcher m = VARIABLE.matcher(value);
            env.put(name, m.replaceAll(v -> {
                String set = host.get(v.group(1));
                boolean empty = set == null || set.isEmpty();
                if (":?".equals(v.group(2)) && empty) {
                    throw new IllegalStateException(v.group(1) + ": " + v.group(3));
                }
                String fallback = ":-".equals(v.group(2)) ? v.group(3) : "";
                return Matcher.quoteReplacement(empty ? fallback : set);
            }));
        });
        return env;
    }

    @SuppressWarnings("unchecked")
    private static Map<String, String> env(Map<String, Object> service) {
        return (Map<String, String>) service.get("environment");
    }

    private static Map<String, Map<String, Object>> services() throws IOException {
        return services("docker-compose.yml");
    }

    @SuppressWarnings("unchecked")
    private static Map<String, Map<String, Object>> services(String file) throws IOException {
        try (Reader reader = Files.newBufferedReader(ROOT.resolve(file))) {
            Map<String, Object> compose = new Yaml().load(reader);
            return (Map<String, Map<String, Object>>) compose.get("services");
        }
    }

    private static String projectVersion() throws IOException {
        Matcher m = Pattern.compile("<artifactId>settle-parent</artifactId>\\s*<version>([^<]+)</version>")
                .matcher(Files.readString(ROOT.resolve("pom.xml")));
        assertTrue(m.find(), "no version in the root pom");
        return m.group(1);
    }

    private static Map<String, Check> withSpring(Map<String, Check> own) {
        Map<String, Check> all = new HashMap<>(own);
        all.put(
                "SPRING_DATASOURCE_URL",
                new Check(
                        b -> bind(b, "spring.datasource", new DataSourceProperties())
                                .getUrl(),
                        s -> s));
        all.put(
                "SPRING_DATASOURCE_PASSWORD",
                new Check(
                        b -> bind(b, "spring.datasource", new DataSourceProperties())
                                .getPassword(),
                        s -> s));
        all.put(
                "SPRING_KAFKA_BOOTSTRAP_SERVERS",
                new Check(
                        b -> bind(b, "spring.kafka", new KafkaProperties()).getBootstrapServers(),
                        s -> List.of(s.split(","))));
        return Map.copyOf(all);
    }

    private static <T> T bind(Binder binder, String prefix, T properties) {
        return binder.bind(prefix, Bindable.ofInstance(properties)).orElse(properties);
    }

    /** The debounce timing both workers bind ({@link DebounceTiming}). */
    private static DebounceTiming debounce(Binder binder) {
        return binder.bind("settle.debounce", DebounceTiming.class).get();
    }

    private static PacingSettings pacing(Binder binder) {
        return binder.bind("settle.debounce", PacingSettings.class).get();
    }

    private static AgentSettings agent(Binder binder) {
        return binder.bindOrCreate("settle", AgentSettings.class);
    }
}
