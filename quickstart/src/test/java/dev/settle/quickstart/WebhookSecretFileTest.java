package dev.settle.quickstart;

import dev.settle.schema.WebhookSecrets;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.Base64;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** The quickstart generates its webhook secret once, keeps it in the data directory, and reuses it. */
class WebhookSecretFileTest {

    @Test
    void generated_on_the_first_start_kept_owner_only_and_reused_by_the_next(@TempDir Path tmp) throws IOException {
        Path dataDir = tmp.resolve("not-yet/data");
        WebhookSecretFile.Secret first = WebhookSecretFile.loadOrCreate(dataDir);
        assertTrue(first.created());
        assertEquals(dataDir.resolve("webhook-secret"), first.file());
        assertNull(WebhookSecrets.problem(first.value()), first.value());
        assertEquals(32, Base64.getDecoder().decode(first.value().substring("whsec_".length())).length);
        assertEquals(first.value() + "\n", Files.readString(first.file()));
        if (Files.getFileStore(first.file()).supportsFileAttributeView("posix")) {
            assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(first.file())));
        }

        WebhookSecretFile.Secret second = WebhookSecretFile.loadOrCreate(dataDir);
        assertFalse(second.created());
        assertEquals(first.value(), second.value(), "a restart signs with the same secret");
        assertEquals(first.value() + "\n", Files.readString(first.file()));
        try (var files = Files.list(dataDir)) {
            assertEquals(1, files.count(), "no temporary file left behind");
        }
        assertFalse(
                WebhookSecretFile.loadOrCreate(tmp.resolve("other")).value().equals(first.value()),
                "another data directory, another secret");
    }

    @Test
    void a_kept_secret_that_is_not_valid_stops_the_start_without_being_replaced(@TempDir Path tmp) throws IOException {
        Path file = tmp.resolve("webhook-secret");
        String weak = "whsec_" + Base64.getEncoder().encodeToString(new byte[16]);
        Files.writeString(file, weak + "\n");
        IllegalStateException e = assertThrows(IllegalStateException.class, () -> WebhookSecretFile.loadOrCreate(tmp));
        assertTrue(e.getMessage().startsWith(file + ": the webhook secret kept there holds 16 bytes"), e.getMessage());
        assertFalse(e.getMessage().contains(weak));
        assertEquals(weak + "\n", Files.readString(file), "left as it was");
    }
}
