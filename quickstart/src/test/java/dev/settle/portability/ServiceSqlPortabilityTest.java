package dev.settle.portability;

import org.junit.jupiter.api.Test;
import org.springframework.core.io.Resource;
import org.springframework.core.io.support.PathMatchingResourcePatternResolver;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Field;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Every SQL text of the three services and of the schema, checked against the portability rules
 * ({@link SqlPortability}, docs/COMPATIBILITY.md): the static final String constants and Map&lt;String, String&gt;
 * constants of every class under dev.settle.{schema,contracts,boot,ingest,debounce,agent} on this classpath (the quickstart depends on
 * all three services), and each statement of the Liquibase changelog.
 */
class ServiceSqlPortabilityTest {
    private static final Pattern SQL =
            Pattern.compile("^\\s*\\(?\\s*(?:SELECT|INSERT|UPDATE|DELETE|REPLACE|WITH|CREATE|ALTER|DROP)\\s");
    private static final List<String> PACKAGES = List.of(
            "dev/settle/schema",
            "dev/settle/contracts",
            "dev/settle/boot",
            "dev/settle/ingest",
            "dev/settle/debounce",
            "dev/settle/agent");

    @Test
    void every_statement_of_the_services_is_portable() throws Exception {
        Map<String, String> statements = collect();
        // the collector itself must see the statements it is meant to check
        assertTrue(statements.size() >= 90, "only " + statements.size() + " statements found: " + statements.keySet());
        for (String known : List.of(
                "dev.settle.agent.webhook.DeliveryQueue.CLAIM",
                "dev.settle.agent.webhook.WebhookEndpoints.DISABLE",
                "dev.settle.ingest.tenancy.Tenants.UPDATE[name]",
                "dev.settle.debounce.TimerFirer.LOCK_DUE",
                "dev.settle.schema.SessionEvents.RESERVE_FENCED",
                "dev.settle.agent.lease.SessionLease.CLAIM",
                "dev.settle.debounce.DebounceTimers.ARM",
                "dev.settle.ingest.views.SessionViews.SESSION",
                "dev.settle.agent.turn.Conversation.READ",
                "changelog#1")) {
            assertTrue(statements.containsKey(known), known + " not collected");
        }
        Set<String> autoIncrement = SqlPortability.autoIncrementTables(changelogStatements());
        assertTrue(
                autoIncrement.containsAll(Set.of("CHAT_TURN", "CHAT_MESSAGE", "TOOL_EXECUTION")),
                autoIncrement::toString);
        Map<String, List<SqlPortability.Finding>> bad = new LinkedHashMap<>();
        statements.forEach((where, sql) -> {
            List<SqlPortability.Finding> findings = SqlPortability.check(sql, autoIncrement);
            if (!findings.isEmpty()) {
                bad.put(where, findings);
            }
        });
        System.out.println("ServiceSqlPortabilityTest checked " + statements.size() + " statements");
        StringBuilder report = new StringBuilder();
        bad.forEach((where, findings) ->
                report.append('\n').append(where).append(": ").append(findings));
        assertEquals(Map.of(), bad, "statements that are not portable to MySQL 8.4 / MariaDB:" + report);
    }

    static Map<String, String> collect() throws Exception {
        Map<String, String> out = new LinkedHashMap<>();
        PathMatchingResourcePatternResolver resolver = new PathMatchingResourcePatternResolver();
        ClassLoader loader = ServiceSqlPortabilityTest.class.getClassLoader();
        List<String> unloadable = new ArrayList<>();
        for (String pkg : PACKAGES) {
            for (Resource r : resolver.getResources("classpath*:" + pkg + "/**/*.class")) {
                String url = r.getURL().toString();
                String name = url.substring(url.lastIndexOf(pkg))
                        .replace(".class", "")
                        .replace('/', '.');
                Class<?> type;
                try {
                    type = Class.forName(name, true, loader);
                } catch (Throwable e) {
                    unloadable.add(name + ": " + e);
                    continue;
                }
                for (Field f : type.getDeclaredFields()) {
                    int mod = f.getModifiers();
                    if (!Modifier.isStatic(mod) || !Modifier.isFinal(mod)) {
                        continue;
                    }
                    String where = type.getName() + "." + f.getName();
                    if (f.getType() == String.class) {
                        f.setAccessible(true);
                        String value = (String) f.get(null);
                        if (value != null && SQL.matcher(value).find()) {
                            out.put(where, value);
                        }
                    } else if (Map.class.isAssignableFrom(f.getType())) {
                        f.setAccessible(true);
                        if (f.get(null) instanceof Map<?, ?> map) {
                            map.forEach((k, v) -> {
                                if (v instanceof String s && SQL.matcher(s).find()) {
                                    out.put(where + "[" + k + "]", s);
                                }
                            });
                        }
                    }
                }
            }
        }
        assertEquals(List.of(), unloadable, "classes the check could not load");
        int n = 0;
        for (String statement : changelogStatements()) {
            out.put("changelog#" + (++n), statement);
        }
        return out;
    }

    /** The Liquibase formatted-SQL changelog split as Liquibase does: on ';' at the end of a statement. */
    static List<String> changelogStatements() throws IOException {
        String text;
        try (InputStream in =
                ServiceSqlPortabilityTest.class.getClassLoader().getResourceAsStream("db/settle-changelog.sql")) {
            assertTrue(in != null, "db/settle-changelog.sql is not on the classpath");
            text = new String(in.readAllBytes(), StandardCharsets.UTF_8);
        }
        List<String> statements = new ArrayList<>();
        StringBuilder current = new StringBuilder();
        for (String line : text.split("\n")) {
            String trimmed = line.strip();
            if (trimmed.startsWith("--")) {
                continue;
            }
            current.append(line).append('\n');
            if (trimmed.endsWith(";")) {
                statements.add(current.toString().strip().replaceAll(";$", ""));
                current.setLength(0);
            }
        }
        if (!current.toString().isBlank()) {
            statements.add(current.toString().strip());
        }
        return statements;
    }
}
