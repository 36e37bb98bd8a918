package dev.settle.ingest.http;

import dev.settle.ingest.IngestApp;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.web.bind.annotation.RequestMethod;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.mvc.method.RequestMappingInfo;
import org.springframework.web.servlet.mvc.method.annotation.RequestMappingHandlerMapping;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * No spelling of a path lets a caller reach a handler it may not run. Every route is taken from Spring MVC's own
 * handler mappings (a new route is covered without editing this test) and sent, spelled many ways (path parameters,
 * percent-encoding of each character, dot segments, doubled slashes, case changes, trailing slashes and suffixes,
 * encoded slashes and backslashes), with every method, by every caller that may not run it: no key, a wrong key, a
 * tenant's key on the admin API, the admin key on tenant routes, another tenant's key on a session. None answers 2xx
 * (but another tenant's event stream of a session id, which waits for that tenant's own session and streams nothing
 * of the other's) and nothing in the database changes. Two deployments: the admin API open (an admin key is set) and closed (none).
 */
class AuthorizationMatrixTest {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    // keep-alive 20 ms: a stream that may be read shows within 20 ms that it has nothing to stream
    private static final Map<String, Object> NO_LIMITS =
            Map.of("settle.limits.rate", "0", "settle.auth.failure-rate", "0", "settle.events.keep-alive", "20ms");
    static IngestApp open;
    static IngestApp closed;
    static String keyA;
    static String keyB;
    static String tenantB;
    static long keyIdB;
    static String closedKeyA;

    @BeforeAll
    static void start() {
        open = new IngestApp("authz_open", NO_LIMITS);
        Map<String, Object> noAdmin = new java.util.HashMap<>(NO_LIMITS);
        noAdmin.put("settle.admin-key", "");
        closed = new IngestApp("authz_closed", noAdmin);
        keyA = tenant(open, "tenant-a");
        keyB = tenant(open, "tenant-b");
        tenantB = "tenant-b";
        JsonNode keys = json(open.call("GET", "/v1/admin/tenants/tenant-b/keys", IngestApp.ADMIN_KEY, null)
                .body());
        keyIdB = keys.get("keys").get(0).get("keyId").asLong();
        assertEquals(
                202,
                open.call("POST", "/v1/sessions/s-a/messages", keyA, "{\"text\":\"mine\"}")
                        .statusCode());
        // the closed deployment has a tenant only through its database (no admin API to create one)
        closed.jdbc.update("INSERT INTO tenant (id, name, created_at) VALUES ('tenant-a', 'a', UTC_TIMESTAMP(6))");
        closedKeyA = "sk_" + "A".repeat(43);
        closed.jdbc.update(
                "INSERT INTO api_key (tenant_id, key_hash, prefix, created_at) VALUES ('tenant-a', ?, 'sk_AAAAAAA', "
                        + "UTC_TIMESTAMP(6))",
                Sha256.hex(closedKeyA));
        assertEquals(
                202,
                closed.call("POST", "/v1/sessions/s-a/messages", closedKeyA, "{\"text\":\"mine\"}")
                        .statusCode());
    }

    @AfterAll
    static void stop() {
        open.close();
        closed.close();
    }

    static String tenant(IngestApp app, String id) {
        var r = app.call("POST", "/v1/admin/tenants", IngestApp.ADMIN_KEY, "{\"id\":\"" + id + "\"}");
        assertEquals(201, r.statusCode(), r.body());
        return json(r.body()).get("apiKey").get("key").asString();
    }

    static JsonNode json(String body) {
        return JSON.readTree(body);
    }

    /** A route as Spring MVC maps it: its pattern, methods and who may run it by the API's rule. */
    record Route(String pattern, Set<String> methods, Caller.Role role) {}

    /** Every handler of the application, with the role the API's path rule gives it. */
    static List<Route> routes(IngestApp app) {
        RequestMappingHandlerMapping mapping =
                app.context.getBean("requestMappingHandlerMapping", RequestMappingHandlerMapping.class);
        List<Route> routes = new ArrayList<>();
        for (Map.Entry<RequestMappingInfo, HandlerMethod> e :
                mapping.getHandlerMethods().entrySet()) {
            if (!e.getValue().getBeanType().getPackageName().startsWith("dev.settle")) {
                continue; // Spring Boot's /error: see the_error_page_is_not_a_route
            }
            for (String pattern : e.getKey().getPatternValues()) {
                Set<String> methods = new LinkedHashSet<>();
                for (RequestMethod m : e.getKey().getMethodsCondition().getMethods()) {
                    methods.add(m.name());
                }
                Caller.Role role = pattern.equals("/v1/openapi.yaml")
                        ? Caller.Role.PUBLIC
                        : pattern.startsWith("/v1/admin/") || pattern.equals("/v1/admin")
                                ? Caller.Role.ADMIN
                                : Caller.Role.TENANT;
                routes.add(new Route(pattern, methods, role));
            }
        }
        return routes;
    }

    @Test
    void every_route_is_known_to_the_rule_and_none_lies_outside_v1() {
        List<Route> routes = routes(open);
        assertTrue(routes.size() >= 12, "handler mappings found: " + routes);
        for (Route r : routes) {
            assertTrue(r.pattern().startsWith("/v1/"), "a route outside /v1 has no access rule: " + r);
        }
        assertTrue(routes.stream().anyMatch(r -> r.role() == Caller.Role.ADMIN));
        assertTrue(routes.stream().anyMatch(r -> r.role() == Caller.Role.TENANT));
    }

    @Test
    void every_handler_declares_the_access_its_path_rule_gives_it() {
        RequestMappingHandlerMapping mapping =
                open.context.getBean("requestMappingHandlerMapping", RequestMappingHandlerMapping.class);
        mapping.getHandlerMethods().forEach((info, handler) -> {
            if (!handler.getBeanType().getPackageName().startsWith("dev.settle")) {
                assertEquals(Set.of("/error"), info.getPatternValues(), "a framework handler: " + handler);
                return;
            }
            for (String pattern : info.getPatternValues()) {
                Caller.Role byPath = pattern.equals("/v1/openapi.yaml")
                        ? Caller.Role.PUBLIC
                        : pattern.startsWith("/v1/admin/") ? Caller.Role.ADMIN : Caller.Role.TENANT;
                assertEquals(byPath, RouteAccess.required(handler), pattern + " " + handler.getShortLogMessage());
            }
        });
    }

    @Test
    void the_error_page_is_not_a_route() throws IOException {
        for (String method : new String[] {"GET", "POST"}) {
            for (String key : new String[] {null, IngestApp.KEY, IngestApp.ADMIN_KEY}) {
                int status = send(open, method, "/error", key, null);
                assertTrue(status == 401 || status == 404, method + " /error with " + key + ": " + status);
            }
        }
    }

    @Test
    void no_spelling_of_an_admin_route_answers_anyone_but_the_admin() throws IOException {
        String before = open.fingerprint();
        List<String> keys = new ArrayList<>(java.util.Arrays.asList(null, keyA, IngestApp.KEY, "sk_" + "B".repeat(43)));
        int sent = sweep(open, Caller.Role.ADMIN, keys);
        assertEquals(before, open.fingerprint(), "a refused request changed the database");
        assertTrue(sent > 2_000, "requests sent: " + sent);
    }

    @Test
    void no_spelling_of_an_admin_route_answers_anyone_when_the_admin_api_is_closed() throws IOException {
        String before = closed.fingerprint();
        List<String> keys =
                new ArrayList<>(java.util.Arrays.asList(null, closedKeyA, IngestApp.KEY, IngestApp.ADMIN_KEY));
        int sent = sweep(closed, Caller.Role.ADMIN, keys);
        assertEquals(before, closed.fingerprint(), "a refused request changed the database");
        assertTrue(sent > 2_000, "requests sent: " + sent);
    }

    @Test
    void no_spelling_of_a_tenant_route_answers_without_a_tenant_key() throws IOException {
        String before = open.fingerprint();
        List<String> keys = new ArrayList<>(java.util.Arrays.asList(null, IngestApp.ADMIN_KEY, "sk_" + "C".repeat(43)));
        int sent = sweep(open, Caller.Role.TENANT, keys);
        assertEquals(before, open.fingerprint(), "a refused request changed the database");
        assertTrue(sent > 2_000, "requests sent: " + sent);
    }

    @Test
    void no_spelling_of_a_session_read_shows_another_tenants_session() throws IOException {
        String before = open.fingerprint();
        int sent = 0;
        int waited = 0; // event streams opened by tenant B: they wait for B's own session of the id
        for (Route route : routes(open)) {
            if (route.role() != Caller.Role.TENANT
                    || !route.pattern().contains("{sessionId}")
                    || !route.methods().contains("GET")) {
                continue;
            }
            boolean events = route.pattern().endsWith("/events");
            for (String path : spellings(fill(route.pattern()))) {
                sent++;
                if (events) {
                    String head = streamUntilKeepAlive(open, path, keyB);
                    if (head.startsWith("HTTP/1.1 200")) {
                        assertFalse(head.contains("\nid: "), "GET " + path + " with tenant B's key streamed " + head);
                        waited++;
                    }
                    continue;
                }
                int status = send(open, "GET", path, keyB, null);
                assertTrue(status < 200 || status > 299, "GET " + path + " with tenant B's key answered " + status);
            }
        }
        assertEquals(before, open.fingerprint());
        assertTrue(sent > 200, "requests sent: " + sent);
        assertTrue(waited > 0, "tenant B's stream of the id waits for its own session");
    }

    /** Sends every spelling of every route of {@code role} with every method and key; asserts none is 2xx. */
    private static int sweep(IngestApp app, Caller.Role role, List<String> keys) throws IOException {
        int sent = 0;
        Map<String, Integer> statuses = new TreeMap<>();
        for (Route route : routes(app)) {
            if (route.role() != role) {
                continue;
            }
            for (String path : spellings(fill(route.pattern()))) {
                for (String method : new String[] {"GET", "POST", "PATCH", "DELETE", "PUT"}) {
                    for (String key : keys) {
                        int status = send(app, method, path, key, body(route));
                        sent++;
                        statuses.merge(Integer.toString(status), 1, Integer::sum);
                        assertTrue(
                                status < 200 || status > 299,
                                method + " " + path + " with key " + key + " answered " + status);
                    }
                }
            }
        }
        System.out.println("authorization sweep of " + role + " routes: " + sent + " requests, statuses " + statuses);
        return sent;
    }

    /** A body that would change state if a handler ran it. */
    private static String body(Route route) {
        if (route.role() == Caller.Role.ADMIN) {
            return "{\"webhookUrl\":\"https://attacker.invalid/hook\",\"id\":\"evil\"}";
        }
        return route.pattern().endsWith("/messages") ? "{\"text\":\"injected\"}" : "{\"policy\":\"reject\"}";
    }

    private static final Pattern VARIABLE = Pattern.compile("\\{([^}]+)}");

    /** The pattern with its variables filled: a victim tenant, its key, tenant A's session. */
    static String fill(String pattern) {
        Matcher m = VARIABLE.matcher(pattern);
        StringBuilder sb = new StringBuilder();
        while (m.find()) {
            String value = switch (m.group(1)) {
                case "tenantId" -> tenantB;
                case "keyId" -> Long.toString(keyIdB);
                case "sessionId" -> "s-a";
                default -> "1";
            };
            m.appendReplacement(sb, value);
        }
        m.appendTail(sb);
        return sb.toString();
    }

    /** The many ways one path can be spelled so that some component might read it as the route. */
    static Set<String> spellings(String path) {
        Set<String> out = new LinkedHashSet<>();
        out.add(path);
        String[] segments = path.substring(1).split("/");
        // path parameters after each segment, and on the last one with a suffix
        for (int i = 0; i < segments.length; i++) {
            for (String param : new String[] {";x", ";", ";jsessionid=1", "%3Bx", "%3bx"}) {
                String[] copy = segments.clone();
                copy[i] = copy[i] + param;
                out.add("/" + String.join("/", copy));
            }
        }
        // percent-encoding of each character (lower-case hex of '/', '.' and ';' below)
        for (int i = 1; i < path.length(); i++) {
            char c = path.charAt(i);
            String hex = String.format("%02X", (int) c);
            out.add(path.substring(0, i) + "%" + hex + path.substring(i + 1));
        }
        // dot segments, plain and encoded
        for (int i = 1; i <= segments.length; i++) {
            String head = "/" + String.join("/", java.util.Arrays.copyOfRange(segments, 0, i));
            String tail = i < segments.length
                    ? "/" + String.join("/", java.util.Arrays.copyOfRange(segments, i, segments.length))
                    : "";
            out.add(head + "/." + tail);
            out.add(head + "/x/.." + tail);
            out.add(head + "/%2e" + tail);
            out.add(head + "/%2E" + tail);
            out.add(head + "/x/%2e%2e" + tail);
            out.add(head + "/.%2e/" + segments[i - 1] + tail);
            out.add(head + "/" + tail); // doubled slash
            out.add(head + "%2F" + tail.replaceFirst("^/", "")); // encoded slash instead of a slash
            out.add(head + "%2f" + tail.replaceFirst("^/", ""));
            out.add(head + "\\" + tail.replaceFirst("^/", "")); // backslash
            out.add(head + "%5C" + tail.replaceFirst("^/", ""));
        }
        out.add("/" + path);
        out.add("/./" + path.substring(1));
        out.add("/x/.." + path);
        // case changes
        out.add(path.toUpperCase(Locale.ROOT));
        for (int i = 0; i < segments.length; i++) {
            String[] copy = segments.clone();
            copy[i] = copy[i].substring(0, 1).toUpperCase(Locale.ROOT) + copy[i].substring(1);
            out.add("/" + String.join("/", copy));
        }
        // trailing slashes and suffixes
        for (String suffix : new String[] {
            "/",
            "//",
            "/.",
            ".json",
            ".yaml",
            ".html",
            "%20",
            "%00",
            "%0A",
            "%09",
            "~",
            "?x=1",
            "#frag",
            "/..;/",
            "%3F",
            "%23",
            "%2F",
            "/%2e%2e/" + segments[segments.length - 1]
        }) {
            out.add(path + suffix);
        }
        // overlong and odd encodings of '/' and '.'
        out.add(path.replace("/", "%C0%AF"));
        out.add(path.replaceFirst("/v1/", "/v1%C0%AF"));
        out.add(path.replaceFirst("/v1/", "/v1%252F"));
        out.add(path.replaceFirst("/v1/", "/%76%31/"));
        return out;
    }

    /** One request on its own connection, written byte for byte as given (no client-side normalisation). */
    /**
     * GETs an event stream and reads the answer until its first keep-alive comment (or its end). A stream sends its
     * first keep-alive only after a poll that found no event, so an event of the session would come before it.
     */
    static String streamUntilKeepAlive(IngestApp app, String path, String key) throws IOException {
        URI base = URI.create(app.base);
        try (Socket socket = new Socket(base.getHost(), base.getPort())) {
            socket.setSoTimeout(10_000);
            String request = "GET " + path + " HTTP/1.1\r\nHost: " + base.getHost() + ":" + base.getPort()
                    + "\r\nConnection: close\r\nAuthorization: Bearer " + key + "\r\n\r\n";
            OutputStream out = socket.getOutputStream();
            out.write(request.getBytes(StandardCharsets.ISO_8859_1));
            out.flush();
            InputStream in = socket.getInputStream();
            StringBuilder head = new StringBuilder();
            int c;
            while ((c = in.read()) != -1) {
                head.append((char) c);
                if (head.toString().endsWith(": keep-alive\n")) {
                    break;
                }
            }
            return head.toString();
        }
    }

    static int send(IngestApp app, String method, String path, String key, String body) throws IOException {
        URI base = URI.create(app.base);
        try (Socket socket = new Socket(base.getHost(), base.getPort())) {
            socket.setSoTimeout(10_000);
            byte[] payload = body == null ? new byte[0] : body.getBytes(StandardCharsets.UTF_8);
            StringBuilder request = new StringBuilder();
            request.append(method)
                    .append(' ')
                    .append(path)
                    .append(" HTTP/1.1\r\n")
                    .append("Host: ")
                    .append(base.getHost())
                    .append(':')
                    .append(base.getPort())
                    .append("\r\n")
                    .append("Connection: close\r\n");
            if (key != null) {
                request.append("Authorization: Bearer ").append(key).append("\r\n");
            }
            if (body != null) {
                request.append("Content-Type: application/json\r\n");
            }
            request.append("Content-Length: ").append(payload.length).append("\r\n\r\n");
            OutputStream out = socket.getOutputStream();
            out.write(request.toString().getBytes(StandardCharsets.ISO_8859_1));
            out.write(payload);
            out.flush();
            InputStream in = socket.getInputStream();
            StringBuilder line = new StringBuilder();
            int c;
            while ((c = in.read()) != -1 && c != '\n') {
                line.append((char) c);
            }
            String status = line.toString();
            if (!status.startsWith("HTTP/1.1 ")) {
                return -1; // the connection was closed without an answer: nothing ran
            }
            return Integer.parseInt(status.substring(9, 12));
        }
    }
}
