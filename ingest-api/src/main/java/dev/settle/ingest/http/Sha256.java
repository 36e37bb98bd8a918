package dev.settle.ingest.http;

import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/** The SHA-256 of a text's UTF-8 bytes, as lowercase hex: how API keys and message bodies are stored and compared. */
public final class Sha256 {
    private static final HexFormat HEX = HexFormat.of();
    /** Each digest is a clone of this one: a clone skips {@code getInstance}'s provider lookup. */
    private static final MessageDigest PROTOTYPE;

    static {
        try {
            PROTOTYPE = MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new ExceptionInInitializerError(e);
        }
    }

    private Sha256() {}

    public static String hex(String text) {
        try {
            MessageDigest digest = (MessageDigest) PROTOTYPE.clone();
            return HEX.formatHex(digest.digest(text.getBytes(StandardCharsets.UTF_8)));
        } catch (CloneNotSupportedException e) {
            throw new IllegalStateException(e);
        }
    }
}
