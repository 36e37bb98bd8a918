package dev.settle.ingest;

import dev.settle.schema.DbTime;
import org.springframework.dao.DuplicateKeyException;
import org.springframework.http.HttpStatus;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;
import org.springframework.transaction.support.TransactionTemplate;

import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

/**
 * The tenants of a deployment and their settings. A tenant is created together with its first API key, in one
 * transaction; its webhook secrets are write-only (a view shows how many are set, never the secrets).
 */
@Component
public class Tenants {
    static final String INSERT = """
            INSERT INTO tenant (id, name, webhook_url, webhook_secrets, default_policy, created_at)
            VALUES (?, ?, ?, ?, ?, UTC_TIMESTAMP(6))""";

    static final String ONE = """
            SELECT id, name, webhook_url, webhook_secrets, default_policy, created_at FROM tenant WHERE id = ?""";

    static final String ALL = """
            SELECT id, name, webhook_url, webhook_secrets, default_policy, created_at FROM tenant ORDER BY id""";

    /** One statement per field named in the update; parameters: value, id. */
    static final Map<String, String> UPDATE = Map.of(
            "name", "UPDATE tenant SET name = ? WHERE id = ?",
            "webhookUrl", "UPDATE tenant SET webhook_url = ? WHERE id = ?",
            "webhookSecrets", "UPDATE tenant SET webhook_secrets = ? WHERE id = ?",
            "defaultPolicy", "UPDATE tenant SET default_policy = ? WHERE id = ?");

    static final String LOCK = "SELECT id FROM tenant WHERE id = ? FOR UPDATE";

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final ApiKeys keys;

    public Tenants(JdbcTemplate jdbc, TransactionTemplate tx, ApiKeys keys) {
        this.jdbc = jdbc;
        this.tx = tx;
        this.keys = keys;
    }

    /** @return the tenant's view with its first key ({@code apiKey}, shown this once) */
    public Map<String, Object> create(TenantRequest request) {
        String id = request.id() != null ? request.id() : "t-" + UUID.randomUUID().toString().substring(0, 13);
        String name = request.name() != null ? request.name() : id;
        try {
            return tx.execute(status -> {
                jdbc.update(INSERT, id, name, request.webhookUrl(), request.webhookSecrets(), request.defaultPolicy());
                ApiKeys.Issued key = keys.issue(id);
                Map<String, Object> body = one(id);
                body.put("apiKey", key.body());
                return body;
            });
        } catch (DuplicateKeyException e) {
            throw ApiProblem.conflict("tenant-exists", "a tenant with id " + id + " exists already");
        }
    }

    public Map<String, Object> update(String id, TenantRequest request) {
        if (request.present().contains("id") && !id.equals(request.id())) {
            throw ApiProblem.badRequest("invalid-id", "a tenant's id cannot change");
        }
        if (request.present().contains("name") && request.name() == null) {
            throw ApiProblem.badRequest("invalid-name", "name cannot be null");
        }
        return tx.execute(status -> {
            if (jdbc.queryForList(LOCK, String.class, id).isEmpty()) {
                throw ApiProblem.notFound("no tenant " + id);
            }
            Map<String, String> values = new LinkedHashMap<>();
            values.put("name", request.name());
            values.put("webhookUrl", request.webhookUrl());
            values.put("webhookSecrets", request.webhookSecrets());
            values.put("defaultPolicy", request.defaultPolicy());
            values.forEach((field, value) -> {
                if (request.present().contains(field)) {
                    jdbc.update(UPDATE.get(field), value, id);
                }
            });
            return one(id);
        });
    }

    /** @return the view, or a 404 problem */
    public Map<String, Object> one(String id) {
        List<Map<String, Object>> rows = jdbc.query(ONE, Tenants::view, id);
        if (rows.isEmpty()) {
            throw ApiProblem.notFound("no tenant " + id);
        }
        return rows.getFirst();
    }

    public List<Map<String, Object>> all() {
        return jdbc.query(ALL, Tenants::view);
    }

    public ApiKeys.Issued newKey(String id) {
        return tx.execute(status -> {
            if (jdbc.queryForList(LOCK, String.class, id).isEmpty()) {
                throw ApiProblem.notFound("no tenant " + id);
            }
            return keys.issue(id);
        });
    }

    public void revokeKey(String id, long keyId) {
        one(id);
        if (!keys.revoke(id, keyId)) {
            boolean known = keys.list(id).stream().anyMatch(k -> ((Long) k.get("keyId")) == keyId);
            if (!known) {
                throw ApiProblem.notFound("tenant " + id + " has no key " + keyId);
            }
            throw new ApiProblem(HttpStatus.CONFLICT, "key-revoked", "key " + keyId + " is revoked already");
        }
    }

    private static Map<String, Object> view(ResultSet rs, int row) throws SQLException {
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("tenantId", rs.getString("id"));
        t.put("name", rs.getString("name"));
        t.put("webhookUrl", rs.getString("webhook_url"));
        String secrets = rs.getString("webhook_secrets");
        t.put("webhookSecrets", secrets == null ? 0 : secrets.trim().split("\\s+").length);
        t.put("defaultPolicy", rs.getString("default_policy"));
        t.put("createdAt", DbTime.instant(rs, "created_at").toString());
        return t;
    }
}
