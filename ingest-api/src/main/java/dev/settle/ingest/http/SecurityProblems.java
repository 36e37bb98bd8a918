package dev.settle.ingest.http;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.http.HttpStatus;
import org.springframework.security.access.AccessDeniedException;
import org.springframework.security.core.AuthenticationException;
import org.springframework.security.web.AuthenticationEntryPoint;
import org.springframework.security.web.access.AccessDeniedHandler;
import org.springframework.security.web.firewall.RequestRejectedException;
import org.springframework.security.web.firewall.RequestRejectedHandler;
import org.springframework.security.web.util.matcher.RequestMatcher;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Every refusal made before a handler runs, as RFC 9457 problem+json with the same types as the handlers' own:
 * 401 {@code unauthorized} (with {@code WWW-Authenticate: Bearer}), 429 {@code rate-limited} (with
 * {@code Retry-After}), 400 {@code rejected-request} for a request the firewall refuses (ambiguous encodings such
 * as {@code ;}, {@code %2F}, {@code %2E}, {@code %25}, dot segments, doubled slashes). Nothing was read or stored for
 * any of them.
 */
final class SecurityProblems implements AuthenticationEntryPoint, AccessDeniedHandler, RequestRejectedHandler {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private final RequestMatcher adminRoutes;
    private final boolean adminClosed;

    SecurityProblems(RequestMatcher adminRoutes, boolean adminClosed) {
        this.adminRoutes = adminRoutes;
        this.adminClosed = adminClosed;
    }

    /** No key on a route that needs one. */
    @Override
    public void commence(HttpServletRequest request, HttpServletResponse response, AuthenticationException e)
            throws IOException {
        missingKey(request, response, adminRoutes.matches(request) ? Caller.Role.ADMIN : Caller.Role.TENANT);
    }

    /** A valid key of the wrong kind (a tenant key on the admin API, the admin key on a tenant route). */
    @Override
    public void handle(HttpServletRequest request, HttpServletResponse response, AccessDeniedException e)
            throws IOException {
        wrongKind(request, response, adminRoutes.matches(request) ? Caller.Role.ADMIN : Caller.Role.TENANT);
    }

    @Override
    public void handle(HttpServletRequest request, HttpServletResponse response, RequestRejectedException e)
            throws IOException {
        write(
                request,
                response,
                400,
                "rejected-request",
                "the request's path or headers are ambiguous or malformed "
                        + "(e.g. ';', an encoded '/', '.', '%' or '\\', dot segments, doubled slashes); nothing was read or stored");
    }

    void missingKey(HttpServletRequest request, HttpServletResponse response, Caller.Role required) throws IOException {
        unauthorized(
                request,
                response,
                forRole(required, "missing Authorization: Bearer <admin key>", "missing Authorization: Bearer <key>"));
    }

    void wrongKind(HttpServletRequest request, HttpServletResponse response, Caller.Role required) throws IOException {
        unauthorized(
                request,
                response,
                forRole(required, "this route needs the admin key", "this route needs a tenant's API key"));
    }

    /** The detail for a route that needs {@code required}; an admin route says so when the admin API is closed. */
    private String forRole(Caller.Role required, String admin, String tenant) {
        if (required != Caller.Role.ADMIN) {
            return tenant;
        }
        return adminClosed ? "the admin API is closed: SETTLE_ADMIN_KEY is not set" : admin;
    }

    static void unauthorized(HttpServletRequest request, HttpServletResponse response, String detail)
            throws IOException {
        response.setHeader("WWW-Authenticate", "Bearer");
        write(request, response, 401, "unauthorized", detail);
    }

    static void rateLimited(
            HttpServletRequest request, HttpServletResponse response, long retryAfterSeconds, String detail)
            throws IOException {
        response.setHeader("Retry-After", Long.toString(retryAfterSeconds));
        write(request, response, 429, "rate-limited", detail);
    }

    private static void write(
            HttpServletRequest request, HttpServletResponse response, int status, String type, String detail)
            throws IOException {
        if (response.isCommitted()) {
            return;
        }
        response.setStatus(status);
        response.setContentType("application/problem+json");
        Map<String, Object> problem = new LinkedHashMap<>();
        problem.put("type", "https://settle.dev/problems/" + type);
        problem.put("title", HttpStatus.valueOf(status).getReasonPhrase());
        problem.put("status", status);
        problem.put("detail", detail);
        problem.put("instance", request.getRequestURI());
        response.getOutputStream().write(JSON.writeValueAsBytes(problem));
    }
}
