package dev.settle.ingest.accept;

import dev.settle.contracts.EventCodec;
import dev.settle.contracts.MessageAccepted;
import dev.settle.contracts.Topics;
import dev.settle.contracts.TypingSignal;
import io.micrometer.core.instrument.MeterRegistry;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.kafka.core.KafkaTemplate;
import org.springframework.stereotype.Component;

import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.RejectedExecutionException;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

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
 *
 * <p>{@link TypingSignal}s go the same way (same thread, topic and key, so a session's signals reach the debounce
 * worker in order with its messages), but they yield to messages: a signal is dropped once the queue is half full,
 * and a signal that is dropped or fails is counted ({@value #TYPING_METRIC}) and logged at most every
 * {@value #TYPING_WARN_EVERY_MILLIS} ms. A lost signal costs at most a turn that starts early.
 */
@Component
class AcceptedEventPublisher implements DisposableBean {
    static final int QUEUE_CAPACITY = 10_000;
    static final String TYPING_METRIC = "settle.typing.signals";
    static final long TYPING_WARN_EVERY_MILLIS = 10_000;
    private static final Logger log = LoggerFactory.getLogger(AcceptedEventPublisher.class);
    private final KafkaTemplate<String, String> kafka;
    private final MeterRegistry meters;
    private final AtomicLong typingWarnedAt = new AtomicLong();
    private final ThreadPoolExecutor sender = new ThreadPoolExecutor(
            1,
            1,
            0,
            TimeUnit.MILLISECONDS,
            new ArrayBlockingQueue<>(QUEUE_CAPACITY),
            Thread.ofPlatform().name("accepted-event-publisher").daemon(true).factory());

    public AcceptedEventPublisher(KafkaTemplate<String, String> kafka, MeterRegistry meters) {
        this.kafka = kafka;
        this.meters = meters;
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

    /** Queues a typing signal unless the queue is half full; returns at once. */
    public void publishTyping(long sessionPk, Instant signalAt) {
        if (sender.getQueue().remainingCapacity() < QUEUE_CAPACITY / 2) {
            typingLost("dropped", sessionPk, "publisher queue half full");
            return;
        }
        try {
            sender.execute(() -> sendTyping(sessionPk, signalAt));
            meters.counter(TYPING_METRIC, "outcome", "queued").increment();
        } catch (RejectedExecutionException e) {
            typingLost("dropped", sessionPk, "publisher queue full or stopped");
        }
    }

    private void sendTyping(long sessionPk, Instant signalAt) {
        ProducerRecord<String, String> record = new ProducerRecord<>(
                Topics.MESSAGE_ACCEPTED,
                Long.toString(sessionPk),
                EventCodec.encode(new TypingSignal(sessionPk, signalAt)));
        record.headers().add(Topics.EVENT_TYPE, TypingSignal.TYPE.getBytes(StandardCharsets.UTF_8));
        try {
            kafka.send(record).whenComplete((result, error) -> {
                if (error != null) {
                    typingLost("failed", sessionPk, error.toString());
                }
            });
        } catch (RuntimeException e) {
            typingLost("failed", sessionPk, e.toString());
        }
    }

    private void typingLost(String outcome, long sessionPk, String why) {
        meters.counter(TYPING_METRIC, "outcome", outcome).increment();
        long now = System.currentTimeMillis();
        long last = typingWarnedAt.get();
        if (now - last >= TYPING_WARN_EVERY_MILLIS && typingWarnedAt.compareAndSet(last, now)) {
            log.warn(
                    "TypingSignal for session {} {} ({}); further ones are counted in {}",
                    sessionPk,
                    outcome,
                    why,
                    TYPING_METRIC);
        }
    }

    private void send(MessageAcceptance.Accepted accepted) {
        MessageAccepted event = new MessageAccepted(
                accepted.sessionPk(),
                accepted.version(),
                accepted.acceptedAt(),
                accepted.oldestUnansweredAt(),
                accepted.policy());
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
