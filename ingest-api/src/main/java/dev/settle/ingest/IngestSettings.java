package dev.settle.ingest;

import org.springframework.boot.context.properties.ConfigurationProperties;

/**
 * @param apiKey         the bearer key clients must present ({@code SETTLE_API_KEY}); required
 * @param maxBodyBytes   larger request bodies are refused with 413
 * @param maxTextChars   longer message texts are refused with 413
 */
@ConfigurationProperties("settle")
public record IngestSettings(String apiKey, Integer maxBodyBytes, Integer maxTextChars) {
    public IngestSettings {
        if (apiKey == null || apiKey.isBlank()) {
            throw new IllegalStateException("SETTLE_API_KEY (settle.api-key) must be set");
        }
        maxBodyBytes = maxBodyBytes == null ? 64 * 1024 : maxBodyBytes;
        maxTextChars = maxTextChars == null ? 16_000 : maxTextChars;
    }
}
