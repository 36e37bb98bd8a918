package dev.settle.ingest.http;

import org.springframework.security.authentication.AbstractAuthenticationToken;
import org.springframework.security.core.authority.SimpleGrantedAuthority;

import java.util.List;

/**
 * An authenticated caller of the API: the admin, or a tenant (by its id). Built only by {@link ApiKeyFilter}
 * from a key it checked; the credentials themselves are not kept.
 */
public final class Caller extends AbstractAuthenticationToken {
    /** What a route requires; {@code PUBLIC} needs no key. */
    public enum Role {
        PUBLIC,
        TENANT,
        ADMIN;

        String authority() {
            return "ROLE_" + name();
        }
    }

    private final Role role;
    private final String tenant;

    private Caller(Role role, String tenant) {
        super(List.of(new SimpleGrantedAuthority(role.authority())));
        this.role = role;
        this.tenant = tenant;
        setAuthenticated(true);
    }

    static Caller admin() {
        return new Caller(Role.ADMIN, null);
    }

    static Caller tenant(String tenantId) {
        return new Caller(Role.TENANT, tenantId);
    }

    public Role role() {
        return role;
    }

    /** @return the tenant id, or null for the admin */
    public String tenant() {
        return tenant;
    }

    @Override
    public Object getCredentials() {
        return "";
    }

    @Override
    public Object getPrincipal() {
        return role == Role.ADMIN ? "admin" : tenant;
    }

    /** Whether this caller may run a handler that requires {@code required}. */
    boolean may(Role required) {
        return required == Role.PUBLIC || required == role;
    }
}
