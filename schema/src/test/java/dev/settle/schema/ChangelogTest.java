package dev.settle.schema;

import com.zaxxer.hikari.HikariDataSource;
import liquibase.ChecksumVersion;
import liquibase.changelog.ChangeLogParameters;
import liquibase.changelog.ChangeSet;
import liquibase.changelog.DatabaseChangeLog;
import liquibase.parser.ChangeLogParserFactory;
import liquibase.resource.ClassLoaderResourceAccessor;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static java.util.Map.entry;
import static org.assertj.core.api.Assertions.assertThat;

/**
 * The changelog: changesets in the order of their numbers, and an applied changeset never changes. Its checksum is
 * recorded by every database that applied it, comments included, so editing a single character of its text (a
 * comment, the section heading that follows it) makes Liquibase refuse to start on those databases. A new
 * changeset adds its entry here.
 */
class ChangelogTest {
    static final String CHANGELOG = "db/settle-changelog.sql";

    /** Every changeset, in file order, with its checksum (Liquibase checksum version 9). */
    static final Map<String, String> APPLIED = Map.ofEntries(
            entry("1-chat-session", "9:18f2e4fab77a580e43568ec81bdc2447"),
            entry("1-chat-message", "9:115edb70e154797aa8ca19739b645511"),
            entry("1-chat-turn", "9:bd06e680f9c38df1c69d32786aee485f"),
            entry("1-debounce-timer", "9:25845af7fe34f4087c2a0e970c233691"),
            entry("1-webhook-delivery", "9:4365b19e1026246920051dfa4c39744e"),
            entry("1-webhook-attempt", "9:37927870dde8d23880384188ef3cf28e"),
            entry("3-tool-execution", "9:7a9d6a4bad9aeddd6a426ad1eafbbfd1"),
            entry("3-ledger-entry", "9:36fcf1eeca1a057c40e79dbe31220332"),
            entry("4-session-burst", "9:58fc872fddbcc5dd2533c33dbdf76f5c"),
            entry("4-session-events-and-policy", "9:79408760376581730a783abc4da7cc4e"),
            entry("5-webhook-delivery-endpoint", "9:1101bf868e6b4edcb87bc86e01aa92eb"),
            entry("5-webhook-delivery-replay", "9:1be1e9978b796a804c6078d5aa7c8337"),
            entry("5-webhook-endpoint", "9:939f6a02bbb4804b38633d3cc473e91f"),
            entry("8-tenant", "9:9fe99bbd489a485d96de78059c977d9f"),
            entry("8-api-key", "9:01cfa5d7cd09e95c390f48cee6cc6ab6"),
            entry("9-message-created-index", "9:bd9c941bb1ec5fff1c08bdbdfd30dcad"),
            entry("16-debounce-timer-typing", "9:2b52e7634a73780cec94b5bd756a424d"),
            entry("16-debounce-timer-window-cause", "9:e9308c8b3463277effc4f413f2d61d9b"),
            entry("16-session-pacing", "9:21d82f7a8321f3f38f95a372c82d66e3"),
            entry("16-tenant-pacing", "9:5196b1cf7945b6e61d9ff124d1371385"),
            entry("16-turn-cached-tokens", "9:a1a5be297701939b635dfad4ffea91c2"),
            entry("16-tool-execution-position", "9:172709ed8e27542788f22c3e5e6dccca"),
            entry("18-debounce-timer-records-burst", "9:32b3925a6badc464d09a3caa2fcb7a30"));

    static final List<String> ORDER = List.of(
            "1-chat-session",
            "1-chat-message",
            "1-chat-turn",
            "1-debounce-timer",
            "1-webhook-delivery",
            "1-webhook-attempt",
            "3-tool-execution",
            "3-ledger-entry",
            "4-session-burst",
            "4-session-events-and-policy",
            "5-webhook-delivery-endpoint",
            "5-webhook-delivery-replay",
            "5-webhook-endpoint",
            "8-tenant",
            "8-api-key",
            "9-message-created-index",
            "16-debounce-timer-typing",
            "16-debounce-timer-window-cause",
            "16-session-pacing",
            "16-tenant-pacing",
            "16-turn-cached-tokens",
            "16-tool-execution-position",
            "18-debounce-timer-records-burst");

    static List<ChangeSet> changeSets() throws Exception {
        ClassLoaderResourceAccessor resources = new ClassLoaderResourceAccessor();
        DatabaseChangeLog log = ChangeLogParserFactory.getInstance()
                .getParser(CHANGELOG, resources)
                .parse(CHANGELOG, new ChangeLogParameters(), resources);
        return log.getChangeSets();
    }

    @Test
    void an_applied_changeset_never_changes() throws Exception {
        Map<String, String> found = new LinkedHashMap<>();
        for (ChangeSet changeSet : changeSets()) {
            assertThat(changeSet.getAuthor()).isEqualTo("settle");
            assertThat(found.put(
                            changeSet.getId(),
                            changeSet.generateCheckSum(ChecksumVersion.V9).toString()))
                    .as("changeset id %s is unique", changeSet.getId())
                    .isNull();
        }
        assertThat(found).isEqualTo(APPLIED);
    }

    @Test
    void changesets_are_in_the_order_of_their_numbers() throws Exception {
        List<String> ids = changeSets().stream().map(ChangeSet::getId).toList();
        assertThat(ids).isEqualTo(ORDER);
        List<Integer> numbers = ids.stream()
                .map(id -> Integer.parseInt(id.substring(0, id.indexOf('-'))))
                .toList();
        assertThat(numbers).isSorted();
    }

    @Test
    void a_new_database_applies_every_changeset_once_in_file_order() {
        try (HikariDataSource ds = Store.migrated("changelog")) {
            assertThat(new JdbcTemplate(ds)
                            .queryForList("SELECT id FROM DATABASECHANGELOG ORDER BY ORDEREXECUTED", String.class))
                    .isEqualTo(ORDER);
        }
    }
}
