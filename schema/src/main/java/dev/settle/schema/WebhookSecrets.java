package dev.settle.schema;

import java.security.SecureRandom;
import java.util.Base64;

/**
 * Webhook signing secrets in the Standard Webhooks form: {@code whsec_} + standard base64 of 24 to 64 random
 * bytes. The one rule for the admin API ({@code tenant.webhook_secrets}) and the agent's
 * {@code SETTLE_WEBHOOK_SECRET}; several secrets are separated by whitespace during rotation.
 */
public final class WebhookSecrets {
    public static final String PREFIX = "whsec_";
    public static final int MIN_BYTES = 24;
    public static final int MAX_BYTES = 64;
    /** What a generated secret holds. */
    static final int GENERATED_BYTES = 32;

    private static final SecureRandom RANDOM = new SecureRandom();

    private WebhookSecrets() {}

    /** @return a new secret of 32 random bytes */
    public static String generate() {
        byte[] key = new byte[GENERATED_BYTES];
        RANDOM.nextBytes(key);
        return PREFIX + Base64.getEncoder().encodeToString(key);
    }

    /** @return null when {@code secret} is one valid secret; otherwise why not (never quoting the secret) */
    public static String problem(String secret) {
        if (secret == null || !secret.startsWith(PREFIX)) {
            return "does not start with " + PREFIX;
        }
        byte[] key;
        try {
            key = Base64.getDecoder().decode(secret.substring(PREFIX.length()));
        } catch (IllegalArgumentException e) {
            return "is not " + PREFIX + " followed by standard base64";
        }
        if (key.length < MIN_BYTES || key.length > MAX_BYTES) {
            return "holds " + key.length + " bytes; a secret is " + MIN_BYTES + " to " + MAX_BYTES + " random bytes";
        }
        return null;
    }
}
