package dev.settle.debounce;

import dev.settle.contracts.TypingSignal;
import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.time.Instant;

import static org.assertj.core.api.Assertions.assertThat;

/** The bounded memory of typing signals that found no timer. */
class EarlySignalsTest {
    private static final Instant T = Instant.parse("2030-01-02T03:04:05Z");

    @Test
    void keeps_the_latest_signal_per_session_and_hands_it_over_once() {
        EarlySignals early = new EarlySignals(Duration.ofMinutes(1));
        early.keep(new TypingSignal(1, T.plusSeconds(2)));
        early.keep(new TypingSignal(1, T.plusSeconds(1)));
        early.keep(new TypingSignal(2, T));

        assertThat(early.take(1)).isEqualTo(new TypingSignal(1, T.plusSeconds(2)));
        assertThat(early.take(1)).isNull();
        assertThat(early.take(2)).isEqualTo(new TypingSignal(2, T));
        assertThat(early.take(3)).isNull();
    }

    @Test
    void a_signal_kept_longer_than_a_hold_is_gone() {
        EarlySignals early = new EarlySignals(Duration.ofNanos(1));
        early.keep(new TypingSignal(1, T));

        assertThat(early.take(1)).isNull();
    }

    @Test
    void holds_at_most_its_capacity_of_unexpired_signals_and_makes_room_from_expired_ones() {
        EarlySignals full = new EarlySignals(Duration.ofMinutes(1));
        for (long s = 1; s <= EarlySignals.CAPACITY; s++) {
            full.keep(new TypingSignal(s, T));
        }
        full.keep(new TypingSignal(0, T));
        assertThat(full.take(0)).as("full of unexpired signals: not kept").isNull();
        assertThat(full.take(EarlySignals.CAPACITY)).isEqualTo(new TypingSignal(EarlySignals.CAPACITY, T));

        EarlySignals expired = new EarlySignals(Duration.ofNanos(1));
        for (long s = 1; s <= EarlySignals.CAPACITY; s++) {
            expired.keep(new TypingSignal(s, T));
        }
        expired.keep(new TypingSignal(0, T));
        assertThat(expired.size()).as("the expired ones made room").isEqualTo(1);
    }
}
