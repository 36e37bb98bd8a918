package dev.settle.ingest.accept;

import dev.settle.contracts.EventCodec;
import dev.settle.contracts.MessageAccepted;
import dev.settle.contracts.Topics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;

/**
 * Publishes {@link MessageAccepted} after the message committed. The event is a wake-up hint: if the
 * broker is down the message is still durable, and the debounce worker's sweeper answers the session
 * ("every message answered", docs/PROMISES.md).
 *
 * <p>The request thread never waits for Kafka: {@link #publish} only queues the event, and one sender thread
 * hands the queued events to the producer in order. While the broker is away (its client then forgets the
 * topic's metadata and rebootstraps) every {@code send} blocks for {@code max.block.ms} before it fails; on the
 * request thread that would make every 202 wait that long. An event that cannot be sent, or that finds the queue
 * ({@value #QUEUE_CAPACITY} events) full, is dropped with a warning: the sweeper answers its session.
 */
@Component
class AcceptedEventPublisher implements DisposableBean {
    static final int QUEUE_CAPACITY = 10_000;
    private static final Logger log = LoggerFactory.getLogger(AcceptedEventPublisher.class);
    private final KafkaTemplate<String, String> kafka;
    private final ThreadPoolExecutor sender = new ThreadPoolExecutor(
            1,
            1,
            0,
            TimeUnit.MILLISECONDS,
            new ArrayBlockingQueue<>(QUEUE_CAPACITY),
            Thread.ofPlatform().name("accepted-event-publisher").daemon(true).factory());

    public AcceptedEventPublisher(KafkaTemplate<String, String> kafka) {
        this.kafka = kafka;
    }

    /** Queues the event and returns at once. */
    public void publish(MessageAcceptance.Accepted accepted) {
        try {
            sender.execute(() -> send(accepted));
        } catch (RejectedExecutionException e) {
            log.warn(
                    "MessageAccepted for session {} v{} not published (publisher queue full or stopped); the sweeper will answer it",
                    accepted.sessionId(),
                    accepted.version());
        }
    }

    private void send(MessageAcceptance.Accepted accepted) {
        MessageAccepted event = new MessageAccepted(
                accepted.sessionPk(), accepted.version(), accepted.acceptedAt(), accepted.oldestUnansweredAt());
        try {
            kafka.send(Topics.MESSAGE_ACCEPTED, Long.toString(accepted.sessionPk()), EventCodec.encode(event))
                    .whenComplete((result, error) -> {
                        if (error != null) {
                            log.warn(
                                    "MessageAccepted for session {} v{} not published ({}); the sweeper will answer it",
                                    accepted.sessionId(),
                                    accepted.version(),
                                    error.toString());
                        }
                    });
        } catch (RuntimeException e) {
            log.warn(
                    "MessageAccepted for session {} v{} not published ({}); the sweeper will answer it",
                    accepted.sessionId(),
                    accepted.version(),
                    e.toString());
        }
    }

    /** Hands the queued events to the producer (for at most 5 s) before the producer closes. */
    @Override
    public void destroy() throws InterruptedException {
        sender.shutdown();
        if (!sender.awaitTermination(5, TimeUnit.SECONDS)) {
            int left = sender.shutdownNow().size();
            log.warn("{} MessageAccepted events not published at shutdown; the sweeper will answer them", left);
        }
    }
}
