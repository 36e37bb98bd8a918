package dev.settle.agent.turn;

import dev.settle.contracts.EventCodec;
import dev.settle.contracts.SessionReady;
import dev.settle.contracts.Topics;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.factory.DisposableBean;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.stereotype.Component;

import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Turns {@code SessionReady} events into turns, each on its own virtual thread so that thousands of slow
 * model calls can be in flight at once; at most {@code settle.agent.max-in-flight} at a time, counted with the
 * orphaned-lease scanner's turns ({@link TurnSlots}; the listener waits for a slot, which is back-pressure on the
 * partition, not a lost event).
 */
@Component
class SessionReadyListener implements DisposableBean {
    private static final Logger log = LoggerFactory.getLogger(SessionReadyListener.class);
    private final TurnRunner runner;
    private final TurnSlots slots;
    private final ExecutorService executor = Executors.newVirtualThreadPerTaskExecutor();

    public SessionReadyListener(TurnRunner runner, TurnSlots slots) {
        this.runner = runner;
        this.slots = slots;
    }

    @KafkaListener(topics = Topics.SESSION_READY)
    public void onSessionReady(String json) throws InterruptedException {
        SessionReady event;
        try {
            event = EventCodec.decode(json, SessionReady.class);
        } catch (RuntimeException e) {
            log.warn("skipping malformed SessionReady event: {}", e.toString());
            return;
        }
        slots.acquire();
        slots.start(executor, event.sessionId(), () -> runner.run(event.sessionId(), event.version()));
    }

    @Override
    public void destroy() {
        executor.shutdownNow();
    }
}
