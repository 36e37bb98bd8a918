package dev.settle.ingest.http;

import dev.settle.ingest.IngestSettings;
import jakarta.servlet.FilterChain;
import jakarta.servlet.ServletException;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.security.core.context.SecurityContext;
import org.springframework.security.core.context.SecurityContextHolder;
import org.springframework.security.core.context.SecurityContextHolderStrategy;
import org.springframework.web.filter.OncePerRequestFilter;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.regex.Pattern;

/**
 * Who is calling. Runs inside Spring Security's chain, after its firewall; it only establishes the caller
 * ({@link Caller}). Which caller may run which handler is decided by {@link ApiSecurity}'s rules and again, on the
 * handler itself, by {@link RouteAccess}, which also takes the tenant's request-rate token.
 *
 * <ol>
 *   <li>No {@code Authorization: Bearer} header: the request goes on anonymous (a route that needs a key refuses
 *       it with 401).</li>
 *   <li>The admin key ({@code SETTLE_ADMIN_KEY}) and the deployment key ({@code SETTLE_API_KEY}, tenant
 *       {@code default}) are compared in constant time, in memory.</li>
 *   <li>Any other key: a client address that has used up its failed attempts ({@link AuthFailureLimiter}) gets
 *       429 before the key is looked at; a key not of the issued form ({@code sk_} + 43 base64url characters)
 *       fails without a lookup; otherwise its hash is looked up ({@link TenantKeys}; a key found live is trusted for
 *       {@code settle.auth.key-cache}, so a live key costs at most one lookup per period, whatever its requests). A
 *       failure answers 401 and is charged to the address.</li>
 *   <li>The tenant id travels on as the request attribute {@link #TENANT}; every query is scoped by it, so another
 *       tenant's session is simply not found (404, the same as one that does not exist).</li>
 * </ol>
 */
public class ApiKeyFilter extends OncePerRequestFilter {
    public static final String TENANT = "settle.tenant";
    public static final String DEFAULT_TENANT = "default";
    static final Pattern ISSUED_KEY = Pattern.compile("sk_[A-Za-z0-9_-]{43}");
    private final SecurityContextHolderStrategy contexts = SecurityContextHolder.getContextHolderStrategy();
    private final byte[] deploymentKey;
    private final byte[] adminKey;
    private final TenantKeys keys;
    private final AuthFailureLimiter failures;

    ApiKeyFilter(IngestSettings settings, TenantKeys keys, AuthFailureLimiter failures) {
        this.deploymentKey = settings.apiKey().getBytes(StandardCharsets.UTF_8);
        this.adminKey = settings.adminKey() == null || settings.adminKey().isBlank()
                ? null
                : settings.adminKey().getBytes(StandardCharsets.UTF_8);
        this.keys = keys;
        this.failures = failures;
    }

    @Override
    protected void doFilterInternal(HttpServletRequest request, HttpServletResponse response, FilterChain chain)
            throws ServletException, IOException {
        String header = request.getHeader("Authorization");
        if (header == null) {
            chain.doFilter(request, response);
            return;
        }
        String presented = header.regionMatches(true, 0, "Bearer ", 0, 7)
                ? header.substring(7).trim()
                : "";
        byte[] bytes = presented.getBytes(StandardCharsets.UTF_8);
        Caller caller;
        if (adminKey != null && MessageDigest.isEqual(adminKey, bytes)) {
            caller = Caller.admin();
        } else if (MessageDigest.isEqual(deploymentKey, bytes)) {
            caller = Caller.tenant(DEFAULT_TENANT);
        } else {
            String address = request.getRemoteAddr();
            long blocked = failures.blockedFor(address);
            if (blocked > 0) {
                SecurityProblems.rateLimited(
                        request,
                        response,
                        blocked,
                        "too many failed authentications from " + "this address; retry after " + blocked + " s");
                return;
            }
            String tenant = ISSUED_KEY.matcher(presented).matches() ? keys.tenantOf(presented) : null;
            if (tenant == null) {
                failures.failed(address);
                SecurityProblems.unauthorized(
                        request,
                        response,
                        presented.isEmpty() ? "missing Authorization: Bearer <key>" : "wrong API key");
                return;
            }
            caller = Caller.tenant(tenant);
        }
        if (caller.role() == Caller.Role.TENANT) {
            request.setAttribute(TENANT, caller.tenant());
        }
        SecurityContext context = contexts.createEmptyContext();
        context.setAuthentication(caller);
        contexts.setContext(context);
        chain.doFilter(request, response);
    }
}
