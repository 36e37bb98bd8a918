package dev.settle.e2e;

import dev.settle.testsupport.Migrations;
import dev.settle.testsupport.SharedInfra;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.jdbc.datasource.DriverManagerDataSource;

import java.time.Duration;
import java.time.Instant;
import java.time.LocalDateTime;
import java.time.ZoneOffset;
import java.time.temporal.ChronoUnit;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;

import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * The chaos run's takeover judge ({@link HistoryChecker#checkTakeovers}): of the leases held at a kill whose turn was
 * later closed as abandoned, it judges those not renewed after the kill against TTL + 2 s from it, and only counts
 * those renewed after it (their holder was alive; their later loss is not the kill's).
 */
class HistoryCheckerTakeoverTest {
    static JdbcTemplate jdbc;

    @BeforeAll
    static void start() {
        DriverManagerDataSource db = new DriverManagerDataSource(SharedInfra.newDatabase("takeovercheck"), "root", "");
        Migrations.migrate(db);
        jdbc = new JdbcTemplate(db);
    }

    @Test
    void a_lease_renewed_after_the_kill_is_not_judged_against_it_and_one_not_renewed_is() {
        // whole milliseconds: the turns' DATETIME(6) times keep it exactly
        Instant kill = Instant.now().minusSeconds(60).truncatedTo(ChronoUnit.MILLIS);
        long late = session("late", kill, 10); // the victim's: taken over 10 s after the kill
        long onTime = session("ontime", kill, 4); // the victim's: 4 s after
        long live = session("live", kill, 10); // a live holder's, lost later
        Map<Long, Instant> expiries =
                Map.of(late, kill.plusSeconds(2), onTime, kill.plusSeconds(2), live, kill.plusSeconds(2));
        ChaosFaults.Kill k = new ChaosFaults.Kill(
                kill,
                Map.of(late, "tok-" + late, onTime, "tok-" + onTime, live, "tok-" + live),
                expiries,
                Set.of(live));
        HistoryChecker checker = new HistoryChecker(jdbc, SettleSystem.MAX_WAIT, Duration.ofSeconds(3));

        checker.checkTakeovers(List.of(k));

        assertEquals(1, checker.violations.size(), checker.violations.toString());
        assertEquals(
                "session " + late + ": taken over 10000 ms after the kill at " + kill
                        + " (limit TTL + 2 s); its lease expired 2000 ms after the kill",
                checker.violations.getFirst());
        assertEquals(
                List.of(4000L, 10000L), checker.takeoverMillis.stream().sorted().toList());
        assertEquals(1, checker.abandonedByLiveHolders);
    }

    /**
     * A session whose turn under {@code tok-<id>} was closed as abandoned, and whose next turn started
     * {@code afterSeconds} after {@code kill}.
     */
    private static long session(String name, Instant kill, int afterSeconds) {
        String external = name + "-" + UUID.randomUUID();
        jdbc.update(
                "INSERT INTO chat_session (external_id, version, created_at) VALUES (?, 1, UTC_TIMESTAMP(6))",
                external);
        long id = jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, external);
        LocalDateTime started = LocalDateTime.ofInstant(kill.minusSeconds(5), ZoneOffset.UTC);
        jdbc.update(
                """
                INSERT INTO chat_turn (session_id, lease_token, lease_epoch, from_version, to_version, state, reason,
                                       started_at, ended_at)
                VALUES (?, ?, 1, 1, 1, 'FAILED', 'abandoned: its holder lost the lease', ?, ?)""", id, "tok-" + id, started, LocalDateTime.ofInstant(kill.plusSeconds(afterSeconds), ZoneOffset.UTC));
        jdbc.update("""
                INSERT INTO chat_turn (session_id, lease_token, lease_epoch, from_version, to_version, state, started_at)
                VALUES (?, ?, 2, 1, 1, 'RUNNING', ?)""", id, "next-" + id, LocalDateTime.ofInstant(kill.plusSeconds(afterSeconds), ZoneOffset.UTC));
        return id;
    }
}
