package dev.settle.ingest.http;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.security.core.Authentication;
import org.springframework.security.core.context.SecurityContextHolder;
import org.springframework.web.method.HandlerMethod;
import org.springframework.web.servlet.HandlerInterceptor;

import java.lang.reflect.Method;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * The second, independent authorization: decided on the handler that Spring MVC resolved for this request, so no
 * spelling of a path can reach a handler its caller may not run, whatever the URL rules in {@link ApiSecurity} match.
 * Every handler of this application must carry {@link ApiAccess}; one without it is refused (fail closed) and
 * logged as a programming error.
 */
final class RouteAccess implements HandlerInterceptor {
    private static final Logger log = LoggerFactory.getLogger(RouteAccess.class);
    private final SecurityProblems problems;
    /** The rule of each handler, found once: handlers and their annotations are fixed when the context starts. */
    private final ConcurrentMap<Handler, Optional<Caller.Role>> rules = new ConcurrentHashMap<>();

    private record Handler(Class<?> beanType, Method method) {}

    RouteAccess(SecurityProblems problems) {
        this.problems = problems;
    }

    @Override
    public boolean preHandle(HttpServletRequest request, HttpServletResponse response, Object handler)
            throws Exception {
        if (!(handler instanceof HandlerMethod method)
                || !method.getBeanType().getPackageName().startsWith("dev.settle")) {
            return true;
        }
        Caller.Role required = rules.computeIfAbsent(
                        new Handler(method.getBeanType(), method.getMethod()),
                        h -> Optional.ofNullable(required(method)))
                .orElse(null);
        if (required == null) {
            log.error("handler {} has no @ApiAccess: refused", method.getShortLogMessage());
            SecurityProblems.unauthorized(request, response, "this route declares no access rule");
            return false;
        }
        Authentication authentication = SecurityContextHolder.getContext().getAuthentication();
        if (required == Caller.Role.PUBLIC) {
            return true;
        }
        if (!(authentication instanceof Caller caller)) {
            problems.missingKey(request, response, required);
            return false;
        }
        if (!caller.may(required)
                || (required == Caller.Role.TENANT
                        && !caller.tenant().equals(request.getAttribute(ApiKeyFilter.TENANT)))) {
            problems.wrongKind(request, response, required);
            return false;
        }
        return true;
    }

    static Caller.Role required(HandlerMethod method) {
        ApiAccess access = AnnotatedElementUtils.findMergedAnnotation(method.getMethod(), ApiAccess.class);
        if (access == null) {
            access = AnnotatedElementUtils.findMergedAnnotation(method.getBeanType(), ApiAccess.class);
        }
        return access == null ? null : access.value();
    }
}
