package dev.settle.ingest.tenancy;

import dev.settle.ingest.IngestSettings;
import dev.settle.ingest.http.Sha256;
import dev.settle.ingest.http.TenantKeys;
import dev.settle.schema.DbTime;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.nio.charset.StandardCharsets;
import java.security.SecureRandom;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Tenant API keys: shown once when issued, stored only as their SHA-256, revocable.
 *
 * <ol>
 *   <li>{@link #issue}: 32 random bytes, base64url, prefixed {@code sk_}; the row keeps the hash and the first
 *       characters (to tell keys apart in listings).</li>
 *   <li>{@link #tenantOf}: the hash of the presented key looks up a live (not revoked) key; the unique index on
 *       the hash makes it one indexed read. The comparison happens inside the database on a hash, so a
 *       timing difference tells nothing about a key. A key found live is trusted for {@code settle.auth.key-cache}
 *       without another lookup ({@link LiveKeys}).</li>
 *   <li>{@link #REVOKE}: one guarded UPDATE; revoking twice, or another tenant's key, changes nothing. This
 *       instance refuses the key from then on; others within {@code settle.auth.key-cache}.</li>
 * </ol>
 */
@Component
class ApiKeys implements TenantKeys {
    static final String INSERT = """
            INSERT INTO api_key (tenant_id, key_hash, prefix, created_at) VALUES (?, ?, ?, UTC_TIMESTAMP(6))""";

    static final String TENANT_OF = """
            SELECT id, tenant_id FROM api_key WHERE key_hash = ? AND revoked_at IS NULL""";

    static final String REVOKE = """
            UPDATE api_key SET revoked_at = UTC_TIMESTAMP(6)
             WHERE id = ? AND tenant_id = ? AND revoked_at IS NULL""";

    static final String LIST = """
            SELECT id, prefix, created_at, revoked_at FROM api_key WHERE tenant_id = ? ORDER BY id""";

    static final String LAST_ID = "SELECT LAST_INSERT_ID()";
    static final int PREFIX_CHARS = 10;

    /** A key as issued: {@code key} is the secret, shown this once. */
    public record Issued(long id, String key, String prefix) {
        Map<String, Object> body() {
            Map<String, Object> body = new LinkedHashMap<>();
            body.put("keyId", id);
            body.put("key", key);
            body.put("prefix", prefix);
            return body;
        }
    }

    private static final SecureRandom RANDOM = new SecureRandom();
    private final JdbcTemplate jdbc;
    private final LiveKeys live;

    public ApiKeys(JdbcTemplate jdbc, IngestSettings settings) {
        this.jdbc = jdbc;
        this.live = new LiveKeys(settings.auth().keyCache());
    }

    /** Call inside a transaction (LAST_INSERT_ID is per connection). */
    public Issued issue(String tenantId) {
        byte[] random = new byte[32];
        RANDOM.nextBytes(random);
        String key = "sk_" + Base64.getUrlEncoder().withoutPadding().encodeToString(random);
        String prefix = key.substring(0, PREFIX_CHARS);
        jdbc.update(INSERT, tenantId, Sha256.hex(key), prefix);
        Long id = jdbc.queryForObject(LAST_ID, Long.class);
        return new Issued(id, key, prefix);
    }

    @Override
    public String tenantOf(String presentedKey) {
        if (presentedKey.isEmpty()
                || presentedKey.length() > 200
                || !StandardCharsets.US_ASCII.newEncoder().canEncode(presentedKey)) {
            return null;
        }
        String hash = Sha256.hex(presentedKey);
        String known = live.tenantOf(hash);
        if (known != null) {
            return known;
        }
        long since = live.generation();
        List<Map.Entry<Long, String>> found =
                jdbc.query(TENANT_OF, (rs, i) -> Map.entry(rs.getLong("id"), rs.getString("tenant_id")), hash);
        if (found.isEmpty()) {
            return null;
        }
        live.remember(hash, found.getFirst().getValue(), found.getFirst().getKey(), since);
        return found.getFirst().getValue();
    }

    /** @return true when the key was live and is revoked now */
    public boolean revoke(String tenantId, long keyId) {
        int rows = jdbc.update(REVOKE, keyId, tenantId);
        if (rows > 1) {
            throw new IllegalStateException("revoking key " + keyId + " touched " + rows + " rows");
        }
        live.forget(keyId);
        return rows == 1;
    }

    public List<Map<String, Object>> list(String tenantId) {
        return jdbc.query(
                LIST,
                (rs, i) -> {
                    Map<String, Object> k = new LinkedHashMap<>();
                    k.put("keyId", rs.getLong("id"));
                    k.put("prefix", rs.getString("prefix"));
                    k.put("createdAt", DbTime.instant(rs, "created_at").toString());
                    var revoked = DbTime.instant(rs, "revoked_at");
                    k.put("revokedAt", revoked == null ? null : revoked.toString());
                    return k;
                },
                tenantId);
    }
}
