package dev.settle.contracts;

import org.junit.jupiter.api.Test;

import java.time.Instant;

import static org.assertj.core.api.Assertions.assertThat;

/** The wire format of every event: what one service encodes, the other decodes to the same value. */
class EventCodecTest {
    private static final Instant ACCEPTED = Instant.parse("2026-11-29T21:33:47.123456Z");

    @Test
    void message_accepted_round_trips_with_microsecond_times() {
        MessageAccepted event = new MessageAccepted(42, 7, ACCEPTED, Instant.parse("2026-11-29T21:33:40.000001Z"));
        assertThat(EventCodec.decode(EventCodec.encode(event), MessageAccepted.class))
                .isEqualTo(event);
    }

    @Test
    void message_accepted_round_trips_without_an_oldest_unanswered_time() {
        MessageAccepted event = new MessageAccepted(42, 1, ACCEPTED, null);
        assertThat(EventCodec.decode(EventCodec.encode(event), MessageAccepted.class))
                .isEqualTo(event);
    }

    @Test
    void message_accepted_carries_the_policy_and_only_enqueue_or_unknown_records_a_burst_end() {
        for (String policy : new String[] {"merge", "enqueue", "reject"}) {
            MessageAccepted event = new MessageAccepted(42, 3, ACCEPTED, ACCEPTED, policy);
            MessageAccepted decoded = EventCodec.decode(EventCodec.encode(event), MessageAccepted.class);
            assertThat(decoded).isEqualTo(event);
            assertThat(decoded.recordsBurstEnd()).isEqualTo(policy.equals("enqueue"));
        }
    }

    @Test
    void an_event_from_an_older_producer_has_no_policy_and_one_from_a_newer_may_carry_unknown_fields() {
        MessageAccepted older = EventCodec.decode(
                "{\"sessionId\":42,\"version\":1,\"acceptedAt\":\"2026-11-29T21:33:47.123456Z\"}",
                MessageAccepted.class);
        assertThat(older).isEqualTo(new MessageAccepted(42, 1, ACCEPTED, null, null));
        assertThat(older.recordsBurstEnd()).isTrue();

        MessageAccepted newer = EventCodec.decode(
                "{\"sessionId\":42,\"version\":1,\"acceptedAt\":\"2026-11-29T21:33:47.123456Z\","
                        + "\"policy\":\"merge\",\"addedLater\":{\"x\":1}}",
                MessageAccepted.class);
        assertThat(newer).isEqualTo(new MessageAccepted(42, 1, ACCEPTED, null, "merge"));
    }

    @Test
    void typing_signal_round_trips_with_microsecond_times() {
        TypingSignal event = new TypingSignal(42, ACCEPTED);
        assertThat(EventCodec.encode(event)).contains("\"sessionId\":42", "\"signalAt\"");
        assertThat(EventCodec.decode(EventCodec.encode(event), TypingSignal.class))
                .isEqualTo(event);
    }

    @Test
    void session_ready_round_trips_for_every_cause() {
        for (String cause : new String[] {"window", "typing", "maxwait", "sweeper"}) {
            SessionReady event = new SessionReady(Long.MAX_VALUE, 12, cause, ACCEPTED);
            assertThat(EventCodec.decode(EventCodec.encode(event), SessionReady.class))
                    .isEqualTo(event);
        }
    }

    @Test
    void the_wire_format_is_plain_json_named_by_the_record_components() {
        String json = EventCodec.encode(new SessionReady(3, 4, "window", ACCEPTED));
        assertThat(json)
                .startsWith("{")
                .contains("\"sessionId\":3", "\"version\":4", "\"cause\":\"window\"", "\"firedAt\"");
        assertThat(EventCodec.decode(
                        "{\"sessionId\":3,\"version\":4,\"cause\":\"sweeper\",\"firedAt\":\"2026-11-29T21:33:47.123456Z\"}",
                        SessionReady.class))
                .isEqualTo(new SessionReady(3, 4, "sweeper", ACCEPTED));
    }

    @Test
    void topics_are_distinct_and_partitioned_alike() {
        assertThat(Topics.MESSAGE_ACCEPTED).isNotEqualTo(Topics.SESSION_READY);
        Topology topology = new Topology();
        assertThat(topology.messageAcceptedTopic().name()).isEqualTo(Topics.MESSAGE_ACCEPTED);
        assertThat(topology.sessionReadyTopic().name()).isEqualTo(Topics.SESSION_READY);
        assertThat(topology.messageAcceptedTopic().numPartitions()).isEqualTo(Topics.PARTITIONS);
        assertThat(topology.sessionReadyTopic().numPartitions()).isEqualTo(Topics.PARTITIONS);
    }
}
