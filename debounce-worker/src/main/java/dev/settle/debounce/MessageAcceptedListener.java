package dev.settle.debounce;

import dev.settle.contracts.EventCodec;
import dev.settle.contracts.MessageAccepted;
import dev.settle.contracts.Topics;
import dev.settle.contracts.TypingSignal;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.common.header.Header;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

import java.nio.charset.StandardCharsets;

/**
 * Arms the session's timer for every MessageAccepted (then applies a typing signal that overtook it,
 * {@link TypingHolds#armed}), and holds it for every {@link TypingSignal} (the records of the topic whose header
 * {@link Topics#EVENT_TYPE} says {@value TypingSignal#TYPE}). A malformed event is logged
 * and skipped, never retried: it must not block the partition, and the sweeper answers the session anyway. Database
 * errors propagate so the container's error handler retries the record.
 */
@Component
public class MessageAcceptedListener {
    private static final Logger log = LoggerFactory.getLogger(MessageAcceptedListener.class);

    private final DebounceTimers timers;
    private final TypingHolds holds;

    public MessageAcceptedListener(DebounceTimers timers, TypingHolds holds) {
        this.timers = timers;
        this.holds = holds;
    }

    @KafkaListener(topics = Topics.MESSAGE_ACCEPTED)
    public void onMessage(ConsumerRecord<String, String> record) {
        Header type = record.headers().lastHeader(Topics.EVENT_TYPE);
        if (type != null) {
            onTyped(record, new String(type.value(), StandardCharsets.UTF_8));
            return;
        }
        MessageAccepted event = decode(record);
        if (event != null && timers.arm(event)) {
            holds.armed(event);
        }
    }

    private void onTyped(ConsumerRecord<String, String> record, String type) {
        TypingSignal signal = null;
        try {
            if (TypingSignal.TYPE.equals(type) && record.value() != null) {
                signal = EventCodec.decode(record.value(), TypingSignal.class);
            }
        } catch (RuntimeException ex) {
            signal = null;
        }
        if (signal == null || signal.signalAt() == null) {
            log.warn(
                    "skipping unknown or malformed event '{}' at {}-{}@{}",
                    type,
                    record.topic(),
                    record.partition(),
                    record.offset());
            return;
        }
        holds.hold(signal);
    }

    private static MessageAccepted decode(ConsumerRecord<String, String> record) {
        try {
            MessageAccepted e =
                    record.value() == null ? null : EventCodec.decode(record.value(), MessageAccepted.class);
            if (e != null && e.acceptedAt() != null && e.version() > 0) {
                return e;
            }
        } catch (RuntimeException ex) {
            log.warn(
                    "skipping malformed MessageAccepted at {}-{}@{}: {}",
                    record.topic(),
                    record.partition(),
                    record.offset(),
                    ex.toString());
            return null;
        }
        log.warn(
                "skipping incomplete MessageAccepted at {}-{}@{}: {}",
                record.topic(),
                record.partition(),
                record.offset(),
                record.value());
        return null;
    }
}
