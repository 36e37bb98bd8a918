package dev.settle.quickstart;

import dev.settle.schema.WebhookSecrets;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.FileAlreadyExistsException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermissions;

/**
 * The quickstart's webhook signing secret when {@code SETTLE_WEBHOOK_SECRET} is not set: generated on the first
 * start ({@link WebhookSecrets#generate}), kept in the data directory ({@value #NAME}, readable by its owner only
 * where the file system has POSIX permissions) and reused by every later start on that directory, so that a
 * receiver configured once keeps verifying.
 */
final class WebhookSecretFile {
    static final String NAME = "webhook-secret";

    /** @param created true when this start generated it */
    record Secret(String value, Path file, boolean created) {}

    private WebhookSecretFile() {}

    static Secret loadOrCreate(Path dataDir) {
        Path file = dataDir.resolve(NAME);
        try {
            Files.createDirectories(dataDir);
            if (!Files.exists(file)) {
                String secret = WebhookSecrets.generate();
                try {
                    create(file, secret);
                    return new Secret(secret, file, true);
                } catch (FileAlreadyExistsException e) {
                    // another process created it meanwhile: use that one
                }
            }
            String secret = Files.readString(file, StandardCharsets.US_ASCII).trim();
            String problem = WebhookSecrets.problem(secret);
            if (problem != null) {
                throw new IllegalStateException(file + ": the webhook secret kept there " + problem
                        + "; fix or delete the file (a new one is generated), or set SETTLE_WEBHOOK_SECRET");
            }
            return new Secret(secret, file, false);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot keep the webhook secret in " + file, e);
        }
    }

    /** Created with owner-only permissions before the secret is written, and never overwritten. */
    private static void create(Path file, String secret) throws IOException {
        Path tmp = file.resolveSibling(NAME + ".tmp");
        Files.deleteIfExists(tmp);
        if (file.getFileSystem().supportedFileAttributeViews().contains("posix")) {
            Files.createFile(tmp, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
        } else {
            Files.createFile(tmp);
        }
        Files.writeString(tmp, secret + "\n", StandardCharsets.US_ASCII, StandardOpenOption.TRUNCATE_EXISTING);
        try {
            Files.move(tmp, file); // refuses to replace an existing file: a secret receivers rely on stays
        } finally {
            Files.deleteIfExists(tmp);
        }
    }
}
