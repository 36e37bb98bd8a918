package dev.settle.debounce;

import dev.settle.debounce.PacingRule.Pacing;
import dev.settle.debounce.PacingRule.Step;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * The adaptive window rule alone, and a deterministic simulation of the bench's fast typist: bursts of 4 messages
 * with pauses uniform in 300–2000 ms and a base window of 1500 ms. A pause longer than the window in effect starts
 * a turn that the next message discards: one more model call for that burst.
 */
class PacingRuleTest {
    static final Duration BASE = Duration.ofMillis(1500);
    static final Duration MAX = Duration.ofSeconds(4);
    static final PacingRule RULE = new PacingRule(BASE, MAX);
    static final Instant T = Instant.parse("2030-01-01T00:00:00Z");

    /** A session in a simulated tenant; bursts are a minute apart (each answered before the next). */
    static final class Typist {
        Pacing pacing;
        Instant now = T;

        /** Types one burst; returns its model calls (1 + the pauses that outlasted the window in effect). */
        int burst(List<Long> tenant, List<Long> pausesMillis) {
            now = now.plus(Duration.ofMinutes(1));
            Step step = message(tenant, false);
            int calls = 1;
            for (long pause : pausesMillis) {
                if (pause > step.window().length().toMillis()) {
                    calls++;
                }
                now = now.plusMillis(pause);
                step = message(tenant, true);
            }
            return calls;
        }

        Step message(List<Long> tenant, boolean continues) {
            Step step = RULE.next(pacing, tenant, now, continues);
            pacing = step.pacing();
            if (step.sampleMillis() != null) {
                List<Long> grown = PacingRule.append(tenant, step.sampleMillis());
                tenant.clear();
                tenant.addAll(grown);
            }
            return step;
        }
    }

    static List<Long> pauses(Random random) {
        return List.of(pause(random), pause(random), pause(random));
    }

    static long pause(Random random) {
        return 300 + random.nextInt(1701);
    }

    @Test
    void a_fast_typist_costs_at_most_1_25_model_calls_per_burst_after_three_bursts() {
        Random random = new Random(16);
        int sessions = 200;
        int bursts = 12;
        int[] callsAtBurst = new int[bursts];
        int fixedCalls = 0;
        for (int s = 0; s < sessions; s++) {
            Typist typist = new Typist();
            List<Long> tenant = new ArrayList<>(); // a tenant of its own: nothing learned before
            for (int b = 0; b < bursts; b++) {
                List<Long> pauses = pauses(random);
                callsAtBurst[b] += typist.burst(tenant, pauses);
                fixedCalls += 1
                        + (int) pauses.stream().filter(p -> p > BASE.toMillis()).count();
            }
        }
        double fixed = fixedCalls / (double) (sessions * bursts);
        double afterThree = 0;
        for (int b = 3; b < bursts; b++) {
            afterThree += callsAtBurst[b];
        }
        afterThree /= sessions * (bursts - 3.0);
        double fourth = callsAtBurst[3] / (double) sessions;

        System.out.printf(
                "fast typist: fixed %.3f, 4th burst %.3f, from the 4th on %.3f calls per burst%n",
                fixed, fourth, afterThree);
        assertThat(fixed).as("the fixed window, for comparison").isGreaterThan(1.8);
        assertThat(fourth).as("calls per burst at the fourth burst").isLessThanOrEqualTo(1.25);
        assertThat(afterThree).as("calls per burst from the fourth burst on").isLessThanOrEqualTo(1.25);
    }

    @Test
    void each_burst_in_a_fresh_session_of_a_tenant_that_typed_three_bursts_costs_at_most_1_25_calls() {
        Random random = new Random(17);
        int tenants = 100;
        int freshBursts = 10;
        int calls = 0;
        for (int t = 0; t < tenants; t++) {
            List<Long> tenant = new ArrayList<>();
            Typist first = new Typist();
            for (int b = 0; b < 3; b++) {
                first.burst(tenant, pauses(random));
            }
            for (int b = 0; b < freshBursts; b++) {
                calls += new Typist().burst(tenant, pauses(random));
            }
        }
        assertThat(calls / (double) (tenants * freshBursts)).isLessThanOrEqualTo(1.25);
    }

    @Test
    void single_message_bursts_keep_exactly_the_base_window() {
        Typist typist = new Typist();
        List<Long> tenant = new ArrayList<>();
        for (int b = 0; b < 40; b++) {
            typist.now = typist.now.plus(Duration.ofMinutes(1));
            assertThat(typist.message(tenant, false).window()).isEqualTo(RULE.base());
        }
        assertThat(typist.pacing.samplesMillis()).hasSize(PacingRule.SAMPLES).containsOnly(0L);
    }

    @Test
    void a_learned_window_decays_to_the_base_once_bursts_end_as_single_messages() {
        Typist typist = new Typist();
        List<Long> tenant = new ArrayList<>();
        for (int b = 0; b < 6; b++) {
            typist.burst(tenant, List.of(1800L, 1800L, 1800L));
        }
        int singles = 0;
        PacingRule.Window window;
        do {
            typist.now = typist.now.plus(Duration.ofMinutes(1));
            window = typist.message(tenant, false).window();
            singles++;
            if (singles == 1) {
                assertThat(window).isEqualTo(new PacingRule.Window(Duration.ofMillis(2250), PacingRule.LEARNED));
            }
        } while (!window.equals(RULE.base()));
        // the first single message follows a burst of 4 (no sample); each later one adds a 0. The 0.9 quantile of
        // 16 is the 15th smallest: the window is learned while two long pauses are left in the ring.
        assertThat(singles).isEqualTo(1 + PacingRule.SAMPLES - 1);
    }

    @Test
    void pauses_longer_than_the_largest_window_teach_nothing_and_the_window_never_passes_it() {
        Pacing p = new Pacing(List.of(3900L, 3900L, 3900L), T, 2);
        Step longPause = RULE.next(p, List.of(), T.plusMillis(4001), true);
        assertThat(longPause.sampleMillis()).isNull();
        assertThat(longPause.pacing().samplesMillis()).hasSize(3);
        assertThat(longPause.pacing().burstMessages()).isEqualTo(3);
        assertThat(longPause.window()).isEqualTo(new PacingRule.Window(MAX, PacingRule.LEARNED));
    }

    @Test
    void a_redelivered_or_reordered_event_teaches_nothing() {
        Pacing p = new Pacing(List.of(1000L), T, 2);
        Step again = RULE.next(p, List.of(1000L), T, true);
        assertThat(again.pacing()).isEqualTo(p);
        assertThat(again.sampleMillis()).isNull();
    }

    @Test
    void a_session_with_fewer_than_three_samples_uses_its_tenants_window() {
        List<Long> tenant = List.of(2000L, 2000L, 2000L);
        Step first = RULE.next(null, tenant, T, false);
        assertThat(first.sampleMillis()).isNull();
        assertThat(first.window()).isEqualTo(new PacingRule.Window(Duration.ofMillis(2500), PacingRule.LEARNED));
        Step own = RULE.next(new Pacing(List.of(0L, 0L, 0L), T, 1), tenant, T.plusSeconds(60), false);
        assertThat(own.window()).isEqualTo(RULE.base());
    }

    @Test
    void rings_are_stored_as_comma_separated_milliseconds() {
        assertThat(PacingRule.format(List.of(0L, 450L, 1999L))).isEqualTo("0,450,1999");
        assertThat(PacingRule.parse("0,450,1999")).containsExactly(0L, 450L, 1999L);
        assertThat(PacingRule.parse("")).isEmpty();
        assertThat(PacingRule.parse(null)).isEmpty();
    }
}
