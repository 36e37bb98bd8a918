package dev.settle.ingest.http;

import jakarta.servlet.DispatcherType;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.context.SecurityContextHolder;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.HandlerInterceptor;

import java.io.IOException;
import java.lang.annotation.Annotation;
import java.lang.reflect.Method;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The second, independent authorization: decided on the handler that Spring MVC resolved for this request, so no
 * spelling of a path can reach a handler its caller may not run, whatever the URL rules in {@link ApiSecurity} match.
 * Every handler of this application must carry {@link ApiAccess}; one without it is refused (fail closed) and
 * logged as a programming error.
 *
 * <p>A tenant's request that may run then takes a token from its tenant's bucket for that handler
 * ({@link RateBucket}, {@link TenantRateLimiter}): none left → 429 with Retry-After. Only the request's own
 * dispatch takes one (not the async dispatch that completes a stream).
 */
final class RouteAccess implements HandlerInterceptor {
    private static final Logger log = LoggerFactory.getLogger(RouteAccess.class);
    private final SecurityProblems problems;
    private final TenantRateLimiter tenantRate;
    /** The rule of each handler, found once: handlers and their annotations are fixed when the context starts. */
    private final ConcurrentMap<Handler, Optional<Rule>> rules = new ConcurrentHashMap<>();

    private record Handler(Class<?> beanType, Method method) {}

    /** Who may run a handler, and which rate bucket it draws from. */
    private record Rule(Caller.Role role, RateBucket.Bucket bucket) {}

    RouteAccess(SecurityProblems problems, TenantRateLimiter tenantRate) {
        this.problems = problems;
        this.tenantRate = tenantRate;
    }

    @Override
    public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler)
            throws Exception {
        if (!(handler instanceof HandlerMethod method)
                || !method.getBeanType().getPackageName().startsWith("dev.settle")) {
            return true;
        }
        Rule rule = rules.computeIfAbsent(
                        new Handler(method.getBeanType(), method.getMethod()), h -> Optional.ofNullable(rule(method)))
                .orElse(null);
        if (rule == null) {
            log.error("handler {} has no @ApiAccess: refused", method.getShortLogMessage());
            SecurityProblems.unauthorized(request, response, "this route declares no access rule");
            return false;
        }
        Authentication authentication = SecurityContextHolder.getContext().getAuthentication();
        if (rule.role() != Caller.Role.PUBLIC) {
            if (!(authentication instanceof Caller caller)) {
                problems.missingKey(request, response, rule.role());
                return false;
            }
            if (!caller.may(rule.role())
                    || (rule.role() == Caller.Role.TENANT
                            && !caller.tenant().equals(request.getAttribute(ApiKeyFilter.TENANT)))) {
                problems.wrongKind(request, response, rule.role());
                return false;
            }
        }
        return withinRate(request, response, authentication, rule.bucket());
    }

    private boolean withinRate(
            HttpServletRequest request,
            HttpServletResponse response,
            Authentication authentication,
            RateBucket.Bucket bucket)
            throws IOException {
        if (request.getDispatcherType() != DispatcherType.REQUEST
                || !(authentication instanceof Caller caller)
                || caller.role() != Caller.Role.TENANT) {
            return true;
        }
        long retryAfter = tenantRate.acquire(caller.tenant(), bucket);
        if (retryAfter > 0) {
            SecurityProblems.rateLimited(
                    request,
                    response,
                    retryAfter,
                    "this tenant's " + bucket.what + " is exhausted; retry after " + retryAfter + " s");
            return false;
        }
        return true;
    }

    private static Rule rule(HandlerMethod method) {
        Caller.Role role = required(method);
        if (role == null) {
            return null;
        }
        RateBucket bucket = annotation(method, RateBucket.class);
        return new Rule(role, bucket == null ? RateBucket.Bucket.REQUESTS : bucket.value());
    }

    /** The handler's annotation of this type: on its method, else on its class (the method wins). */
    private static <A extends Annotation> A annotation(HandlerMethod method, Class<A> type) {
        A found = AnnotatedElementUtils.findMergedAnnotation(method.getMethod(), type);
        return found != null ? found : AnnotatedElementUtils.findMergedAnnotation(method.getBeanType(), type);
    }

    static Caller.Role required(HandlerMethod method) {
        ApiAccess access = annotation(method, ApiAccess.class);
        return access == null ? null : access.value();
    }
}
