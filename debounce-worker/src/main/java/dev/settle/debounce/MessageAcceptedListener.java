package dev.settle.debounce;

import dev.settle.contracts.EventCodec;
import dev.settle.contracts.MessageAccepted;
import dev.settle.contracts.Topics;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

/**
 * Arms the session's timer for every MessageAccepted. A malformed event is logged and skipped, never retried:
 * it must not block the partition, and the sweeper answers the session anyway. Database errors propagate so
 * the container's error handler retries the record.
 */
@Component
public class MessageAcceptedListener {
    private static final Logger log = LoggerFactory.getLogger(MessageAcceptedListener.class);

    private final DebounceTimers timers;

    public MessageAcceptedListener(DebounceTimers timers) {
        this.timers = timers;
    }

    @KafkaListener(topics = Topics.MESSAGE_ACCEPTED)
    public void onMessage(ConsumerRecord<String, String> record) {
        MessageAccepted event = decode(record);
        if (event != null) {
            timers.arm(event);
        }
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
