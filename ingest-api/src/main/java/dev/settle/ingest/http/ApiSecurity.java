package dev.settle.ingest.http;

import dev.settle.ingest.IngestSettings;
import jakarta.servlet.DispatcherType;
import org.springframework.boot.actuate.autoconfigure.web.server.ManagementPortType;
import org.springframework.boot.security.autoconfigure.actuate.web.servlet.EndpointRequest;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.core.env.Environment;
import org.springframework.http.HttpMethod;
import org.springframework.security.config.annotation.web.builders.HttpSecurity;
import org.springframework.security.config.annotation.web.configuration.EnableWebSecurity;
import org.springframework.security.config.http.SessionCreationPolicy;
import org.springframework.security.config.observation.SecurityObservationSettings;
import org.springframework.security.web.SecurityFilterChain;
import org.springframework.security.web.access.intercept.AuthorizationFilter;
import org.springframework.security.web.firewall.RequestRejectedHandler;
import org.springframework.security.web.servlet.util.matcher.PathPatternRequestMatcher;
import org.springframework.security.web.util.matcher.RequestMatcher;
import org.springframework.web.servlet.config.annotation.InterceptorRegistry;
import org.springframework.web.servlet.config.annotation.WebMvcConfigurer;

/**
 * Who may call what, decided twice and never on the raw request URI:
 *
 * <ol>
 *   <li>Spring Security's {@code StrictHttpFirewall} refuses every ambiguous spelling of a path ({@code ;} path
 *       parameters, encoded {@code /}, {@code .}, {@code %} and {@code \}, dot segments, doubled slashes, control
 *       characters) with 400 before anything else runs.</li>
 *   <li>{@link ApiKeyFilter} establishes the caller from its bearer key.</li>
 *   <li>URL rules on the decoded, normalised path (the same path patterns Spring MVC routes on):
 *       {@code GET /v1/openapi.yaml} public, {@code /v1/admin/**} the admin key, the rest of {@code /v1/**} a tenant
 *       key. Actuator endpoints exist only on the management port ({@code SETTLE_MANAGEMENT_PORT}).</li>
 *   <li>{@link RouteAccess}: the handler that is about to run states its {@link ApiAccess}, and the caller must have
 *       it. A handler that states none is refused.</li>
 * </ol>
 * Refusals are problem+json ({@link SecurityProblems}). No session, no cookies, no CSRF token: every request
 * carries its key.
 */
@Configuration(proxyBeanMethods = false)
@EnableWebSecurity
class ApiSecurity implements WebMvcConfigurer {
    static final RequestMatcher ADMIN_ROUTES =
            PathPatternRequestMatcher.withDefaults().matcher("/v1/admin/**");
    private final SecurityProblems problems;
    private final TenantRateLimiter tenantRate;

    ApiSecurity(IngestSettings settings, Environment environment, TenantRateLimiter tenantRate) {
        this.tenantRate = tenantRate;
        if (ManagementPortType.get(environment) == ManagementPortType.SAME) {
            throw new IllegalStateException(
                    "SETTLE_MANAGEMENT_PORT (management.server.port) must differ from the API "
                            + "port: actuator (metrics naming every tenant, health) is never served on the API port; -1 turns it off");
        }
        this.problems = new SecurityProblems(
                ADMIN_ROUTES, settings.adminKey() == null || settings.adminKey().isBlank());
    }

    @Bean
    SecurityFilterChain apiFilterChain(HttpSecurity http, IngestSettings settings, TenantKeys keys) throws Exception {
        AuthFailureLimiter failures = new AuthFailureLimiter(
                settings.auth().failureRate(), settings.auth().failureBurst());
        http.csrf(c -> c.disable())
                .httpBasic(b -> b.disable())
                .formLogin(f -> f.disable())
                .logout(l -> l.disable())
                .requestCache(r -> r.disable())
                .sessionManagement(s -> s.sessionCreationPolicy(SessionCreationPolicy.STATELESS))
                .addFilterBefore(new ApiKeyFilter(settings, keys, failures), AuthorizationFilter.class)
                .exceptionHandling(e -> e.authenticationEntryPoint(problems).accessDeniedHandler(problems))
                .authorizeHttpRequests(a -> a.dispatcherTypeMatchers(DispatcherType.ERROR)
                        .permitAll()
                        .requestMatchers("/error")
                        .denyAll() // Spring Boot's error page is no route of its own
                        .requestMatchers(EndpointRequest.toAnyEndpoint())
                        .permitAll()
                        .requestMatchers(HttpMethod.GET, OpenApiController.PATH)
                        .permitAll()
                        .requestMatchers(ADMIN_ROUTES)
                        .hasRole(Caller.Role.ADMIN.name())
                        .requestMatchers("/v1/**")
                        .hasRole(Caller.Role.TENANT.name())
                        // nothing outside /v1 has a handler here; RouteAccess refuses any handler without a rule
                        .anyRequest()
                        .permitAll());
        return http.build();
    }

    /**
     * No Micrometer observation of each security filter, authentication and authorization
     * ({@code spring.security.*}): wrapping every filter of the chain in an observation cost more CPU per request
     * than the filters themselves. Each request is still observed once, as {@code http.server.requests}.
     */
    @Bean
    static SecurityObservationSettings securityObservationSettings() {
        return SecurityObservationSettings.noObservations();
    }

    @Bean
    RequestRejectedHandler requestRejectedHandler() {
        return problems;
    }

    @Override
    public void addInterceptors(InterceptorRegistry registry) {
        registry.addInterceptor(new RouteAccess(problems, tenantRate));
    }
}
