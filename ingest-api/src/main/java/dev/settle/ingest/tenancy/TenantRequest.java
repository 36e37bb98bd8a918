package dev.settle.ingest.tenancy;

import dev.settle.ingest.IngestSettings;
import dev.settle.ingest.http.ApiProblem;
import dev.settle.ingest.http.JsonBody;
import dev.settle.schema.WebhookSecrets;
import jakarta.servlet.http.HttpServletRequest;
import tools.jackson.core.StreamReadFeature;
import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.net.URI;
import java.net.URISyntaxException;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Set;
import java.util.regex.Pattern;

/**
 * A validated admin body for a tenant: {@code {"id", "name", "webhookUrl", "webhookSecrets", "defaultPolicy"}}.
 * Each field is optional; {@code present} tells which ones the body named (so that an update can clear a field
 * with {@code null}). Everything is checked before anything is written.
 */
record TenantRequest(
        String id, String name, String webhookUrl, String webhookSecrets, String defaultPolicy, Set<String> present) {
    static final Pattern TENANT_ID = Pattern.compile("[a-z0-9][a-z0-9_-]{0,63}");
    private static final Set<String> FIELDS = Set.of("id", "name", "webhookUrl", "webhookSecrets", "defaultPolicy");
    private static final JsonMapper JSON = JsonMapper.builder()
            .enable(StreamReadFeature.STRICT_DUPLICATE_DETECTION)
            .build();

    static String checkTenantId(String id) {
        if (id == null || !TENANT_ID.matcher(id).matches()) {
            throw ApiProblem.badRequest(
                    "invalid-tenant-id",
                    "a tenant id is 1-64 characters of [a-z0-9_-], " + "starting with a letter or digit");
        }
        return id;
    }

    static TenantRequest read(HttpServletRequest request, IngestSettings settings) throws IOException {
        JsonNode root = JsonBody.read(request, settings.maxBodyBytes(), JSON);
        if (root == null || !root.isObject()) {
            throw ApiProblem.badRequest("malformed-json", "the body must be a JSON object");
        }
        Set<String> present = new java.util.HashSet<>(root.propertyNames());
        for (String field : present) {
            if (!FIELDS.contains(field)) {
                throw ApiProblem.badRequest("unknown-field", "unknown field " + field + "; known: " + FIELDS);
            }
        }
        String id = text(root, "id");
        if (id != null) {
            checkTenantId(id);
        }
        String name = text(root, "name");
        if (name != null
                && (name.isBlank() || name.length() > 200 || name.chars().anyMatch(c -> c < 0x20 || c == 0x7F))) {
            throw ApiProblem.badRequest("invalid-name", "name must be 1-200 printable characters");
        }
        String url = text(root, "webhookUrl");
        if (url != null) {
            url = checkUrl(url);
        }
        String secrets = secrets(root.get("webhookSecrets"));
        String policy = text(root, "defaultPolicy");
        if (policy != null && !IngestSettings.POLICIES.contains(policy)) {
            throw ApiProblem.badRequest("invalid-policy", "defaultPolicy must be one of " + IngestSettings.POLICIES);
        }
        return new TenantRequest(id, name, url, secrets, policy, Set.copyOf(present));
    }

    private static String text(JsonNode root, String field) {
        JsonNode node = root.get(field);
        if (node == null || node.isNull()) {
            return null;
        }
        if (!node.isString()) {
            throw ApiProblem.badRequest("invalid-" + field, field + " must be a string");
        }
        return node.asString();
    }

    /**
     * http or https, absolute, with a host, in its ASCII form, at most 2048 characters. Whether the host is
     * allowed (no private networks) is checked by the agent's SSRF guard on every attempt, where DNS is resolved.
     */
    static String checkUrl(String url) {
        try {
            URI uri = new URI(url.trim());
            String scheme = uri.getScheme() == null ? "" : uri.getScheme().toLowerCase(Locale.ROOT);
            if ((scheme.equals("http") || scheme.equals("https"))
                    && uri.getHost() != null
                    && uri.getUserInfo() == null
                    && uri.toASCIIString().length() <= 2048) {
                return uri.toASCIIString();
            }
        } catch (URISyntaxException e) {
            // refused below
        }
        throw ApiProblem.badRequest(
                "invalid-webhookUrl",
                "webhookUrl must be an absolute http(s) URL with a host and no user info, at most 2048 characters");
    }

    /**
     * One to ten secrets ({@link WebhookSecrets}: whsec_ + base64 of 24-64 bytes), as a space-separated string or
     * an array. A value that is not that is refused with 422 (the JSON itself was fine).
     */
    private static String secrets(JsonNode node) {
        if (node == null || node.isNull()) {
            return null;
        }
        List<String> secrets = new ArrayList<>();
        if (node.isString()) {
            secrets.addAll(List.of(node.asString().trim().split("\\s+")));
        } else if (node.isArray()) {
            for (JsonNode s : node) {
                if (!s.isString()) {
                    throw invalidSecrets("every item of webhookSecrets must be a string");
                }
                secrets.add(s.asString().trim());
            }
        } else {
            throw invalidSecrets("webhookSecrets must be a space-separated string or an array of strings");
        }
        if (secrets.isEmpty() || secrets.size() > 10) {
            throw invalidSecrets("webhookSecrets must hold one to ten secrets");
        }
        for (int i = 0; i < secrets.size(); i++) {
            String problem = WebhookSecrets.problem(secrets.get(i));
            if (problem != null) {
                throw invalidSecrets("webhookSecrets: secret #" + (i + 1) + " " + problem);
            }
        }
        return String.join(" ", secrets);
    }

    private static ApiProblem invalidSecrets(String detail) {
        return ApiProblem.unprocessable(
                "invalid-webhookSecrets",
                detail + "; a secret is " + WebhookSecrets.PREFIX
                        + " followed by the standard base64 of " + WebhookSecrets.MIN_BYTES + " to "
                        + WebhookSecrets.MAX_BYTES
                        + " random bytes (the Standard Webhooks form), e.g. 32 bytes from a CSPRNG");
    }
}
