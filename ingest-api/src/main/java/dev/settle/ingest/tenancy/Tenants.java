package dev.settle.ingest.tenancy;

import dev.settle.ingest.http.ApiProblem;
import dev.settle.schema.DbTime;
import dev.settle.schema.WebhookSecrets;
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
 *
 * <p>A tenant's deliveries to its own {@code webhookUrl} are signed with its own secrets only (never the
 * deployment's). So a request that sets a {@code webhookUrl} on a tenant that has no secrets, and names none,
 * gets one generated ({@link WebhookSecrets#generate}), returned once as {@code webhookSecret} in that answer;
 * and the secrets of a tenant that has a {@code webhookUrl} cannot be removed.
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

    /** After an update, in its transaction (the row is locked): what the signing rule needs. */
    static final String WEBHOOK = "SELECT webhook_url, webhook_secrets FROM tenant WHERE id = ?";

    private final JdbcTemplate jdbc;
    private final TransactionTemplate tx;
    private final ApiKeys keys;

    public Tenants(JdbcTemplate jdbc, TransactionTemplate tx, ApiKeys keys) {
        this.jdbc = jdbc;
        this.tx = tx;
        this.keys = keys;
    }

    /**
     * @return the tenant's view with its first key ({@code apiKey}) and, when one was generated, its webhook secret
     * ({@code webhookSecret}), both shown this once
     */
    public Map<String, Object> create(TenantRequest request) {
        String id = request.id() != null
                ? request.id()
                : "t-" + UUID.randomUUID().toString().substring(0, 13);
        String name = request.name() != null ? request.name() : id;
        String generated =
                request.webhookUrl() != null && request.webhookSecrets() == null ? WebhookSecrets.generate() : null;
        try {
            return tx.execute(status -> {
                jdbc.update(
                        INSERT,
                        id,
                        name,
                        request.webhookUrl(),
                        generated != null ? generated : request.webhookSecrets(),
                        request.defaultPolicy());
                ApiKeys.Issued key = keys.issue(id);
                Map<String, Object> body = one(id);
                body.put("apiKey", key.body());
                if (generated != null) {
                    body.put("webhookSecret", generated);
                }
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
            String generated = signingSecretFor(id, request);
            Map<String, Object> body = one(id);
            if (generated != null) {
                body.put("webhookSecret", generated);
            }
            return body;
        });
    }

    /**
     * The signing rule after an update, in its transaction: a tenant with a webhook URL has secrets. Throwing rolls
     * the whole update back.
     *
     * @return the secret generated (and stored) because the request set a URL on a tenant without secrets, or null
     */
    private String signingSecretFor(String id, TenantRequest request) {
        Map<String, Object> row = jdbc.queryForMap(WEBHOOK, id);
        if (row.get("webhook_url") == null || row.get("webhook_secrets") != null) {
            return null;
        }
        if (request.present().contains("webhookSecrets")) {
            throw ApiProblem.unprocessable(
                    "invalid-webhookSecrets",
                    "webhookSecrets cannot be removed while the "
                            + "tenant has a webhookUrl: its deliveries are signed with its own secrets only, or not sent; "
                            + "set new secrets, or clear webhookUrl in the same request");
        }
        if (request.webhookUrl() == null) {
            return null; // not generated unasked: its deliveries are not sent, with that reason, until it has some
        }
        String generated = WebhookSecrets.generate();
        jdbc.update(UPDATE.get("webhookSecrets"), generated, id);
        return generated;
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
