package dev.settle.ingest;

import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;
import org.springframework.web.filter.OncePerRequestFilter;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.LinkedHashMap;
import java.util.Map;
import tools.jackson.databind.json.JsonMapper;

/**
 * Who is calling, on every {@code /v1/} request ({@code /v1/openapi.yaml} is public):
 *
 * <ol>
 *   <li>{@code /v1/admin/}: only {@code Authorization: Bearer <SETTLE_ADMIN_KEY>}; without that setting the admin
 *       API is closed (401).</li>
 *   <li>Otherwise the deployment's {@code SETTLE_API_KEY} is the tenant {@code default}; any other key is looked
 *       up by its hash ({@link ApiKeys}); a revoked or unknown key gets 401.</li>
 *   <li>The tenant's request rate ({@link TenantRateLimiter}): over it → 429 with Retry-After.</li>
 *   <li>The tenant id travels on as the request attribute {@link #TENANT}; every query is scoped by it, so another
 *       tenant's session is simply not found (404, the same as one that does not exist).</li>
 * </ol>
 */
@Component
public class ApiKeyFilter extends OncePerRequestFilter {
    public static final String TENANT = "settle.tenant";
    public static final String DEFAULT_TENANT = "default";
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private final byte[] expected;
    private final byte[] admin;
    private final ApiKeys keys;
    private final TenantRateLimiter limiter;

    public ApiKeyFilter(IngestSettings settings, ApiKeys keys, TenantRateLimiter limiter) {
        this.expected = settings.apiKey().getBytes(StandardCharsets.UTF_8);
        this.admin = settings.adminKey() == null || settings.adminKey().isBlank() ? null
                : settings.adminKey().getBytes(StandardCharsets.UTF_8);
        this.keys = keys;
        this.limiter = limiter;
    }

    @Override
    protected boolean shouldNotFilter(HttpServletRequest request) {
        String uri = request.getRequestURI();
        return !uri.startsWith("/v1/") || uri.equals(OpenApiController.PATH);
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        String header = request.getHeader("Authorization");
        String presented = header != null && header.regionMatches(true, 0, "Bearer ", 0, 7)
                ? header.substring(7).trim() : null;
        if (request.getRequestURI().startsWith("/v1/admin/") || request.getRequestURI().equals("/v1/admin")) {
            if (admin == null) {
                refuse(request, response, 401, "unauthorized", "the admin API is closed: SETTLE_ADMIN_KEY is not set");
            } else if (presented != null && MessageDigest.isEqual(admin, presented.getBytes(StandardCharsets.UTF_8))) {
                chain.doFilter(request, response);
            } else {
                refuse(request, response, 401, "unauthorized", header == null
                        ? "missing Authorization: Bearer <admin key>" : "wrong admin key");
            }
            return;
        }
        String tenant = null;
        if (presented != null) {
            tenant = MessageDigest.isEqual(expected, presented.getBytes(StandardCharsets.UTF_8))
                    ? DEFAULT_TENANT : keys.tenantOf(presented);
        }
        if (tenant == null) {
            refuse(request, response, 401, "unauthorized",
                    header == null ? "missing Authorization: Bearer <key>" : "wrong API key");
            return;
        }
        long retryAfter = limiter.acquire(tenant);
        if (retryAfter > 0) {
            response.setHeader("Retry-After", Long.toString(retryAfter));
            refuse(request, response, 429, "rate-limited",
                    "this tenant's request rate is exhausted; retry after " + retryAfter + " s");
            return;
        }
        request.setAttribute(TENANT, tenant);
        chain.doFilter(request, response);
    }

    private static void refuse(HttpServletRequest request, HttpServletResponse response, int status, String type,
                               String detail) throws IOException {
        response.setStatus(status);
        if (status == 401) {
            response.setHeader("WWW-Authenticate", "Bearer");
        }
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
