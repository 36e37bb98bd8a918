package dev.settle.ingest;

import dev.settle.schema.EventCodec;
import dev.settle.schema.MessageAccepted;
import dev.settle.schema.Topics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;

/**
 * Publishes {@link MessageAccepted} after the message committed. The event is a wake-up hint: if the
 * broker is down the message is still durable, and the debounce worker's sweeper answers the session.
 */
@Component
public class AcceptedEventPublisher {
    private static final Logger log = LoggerFactory.getLogger(AcceptedEventPublisher.class);
    private final KafkaTemplate<String, String> kafka;

    public AcceptedEventPublisher(KafkaTemplate<String, String> kafka) {
        this.kafka = kafka;
    }

    public void publish(MessageAcceptance.Accepted accepted) {
        MessageAccepted event = new MessageAccepted(accepted.sessionPk(), accepted.version(),
                accepted.acceptedAt(), accepted.oldestUnansweredAt());
        try {
            kafka.send(Topics.MESSAGE_ACCEPTED, Long.toString(accepted.sessionPk()), EventCodec.encode(event))
                    .whenComplete((result, error) -> {
                        if (error != null) {
                            log.warn("MessageAccepted for session {} v{} not published ({}); the sweeper will answer it",
                                    accepted.sessionId(), accepted.version(), error.toString());
                        }
                    });
        } catch (RuntimeException e) {
            log.warn("MessageAccepted for session {} v{} not published ({}); the sweeper will answer it",
                    accepted.sessionId(), accepted.version(), e.toString());
        }
    }
}
