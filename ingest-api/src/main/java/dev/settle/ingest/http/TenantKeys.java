package dev.settle.ingest.http;

/** Which tenant an issued API key belongs to ({@link ApiKeyFilter} asks; the tenancy package keeps the keys). */
public interface TenantKeys {
    /** @return the tenant of a live (not revoked) key, or null */
    String tenantOf(String presentedKey);
}
