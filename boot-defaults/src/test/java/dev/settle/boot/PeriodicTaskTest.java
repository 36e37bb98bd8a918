package dev.settle.boot;

import org.junit.jupiter.api.Test;

import java.time.Duration;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

class PeriodicTaskTest {
    @Test
    void a_fixed_rate_task_ticks_until_stopped_and_a_failing_tick_does_not_end_the_loop() {
        AtomicInteger ticks = new AtomicInteger();
        PeriodicTask task = new PeriodicTask("fixed-rate-test", Duration.ofMillis(5)) {
            @Override
            protected void tick() {
                if (ticks.incrementAndGet() % 2 == 0) {
                    throw new IllegalStateException("every second tick fails");
                }
            }
        };
        task.start();
        assertThat(task.isRunning()).isTrue();
        await().atMost(Duration.ofSeconds(10)).until(() -> ticks.get() >= 6);
        task.stop();
        assertThat(task.isRunning()).isFalse();
    }

    @Test
    void a_round_that_returns_zero_runs_again_at_once_and_stop_lets_the_round_in_progress_finish() throws Exception {
        AtomicInteger rounds = new AtomicInteger();
        CountDownLatch inLastRound = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicBoolean interrupted = new AtomicBoolean();
        PeriodicTask task = new PeriodicTask("adaptive-test", Duration.ofHours(1)) {
            @Override
            protected Duration firstDelay() {
                return Duration.ZERO;
            }

            @Override
            protected Duration round() {
                if (rounds.incrementAndGet() < 5) {
                    return Duration.ZERO; // a backlog: again at once, not after the hour
                }
                inLastRound.countDown();
                try {
                    release.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    interrupted.set(true);
                }
                interrupted.compareAndSet(false, Thread.currentThread().isInterrupted());
                return Duration.ofHours(1);
            }
        };
        task.start();
        assertThat(inLastRound.await(10, TimeUnit.SECONDS)).isTrue();
        Thread stopper = Thread.ofPlatform().start(task::stop);
        await().atMost(Duration.ofSeconds(5)).until(() -> stopper.getState() == Thread.State.TIMED_WAITING);
        assertThat(task.isRunning()).isTrue();
        release.countDown();
        stopper.join(10_000);
        assertThat(task.isRunning()).isFalse();
        assertThat(rounds.get()).isEqualTo(5);
        assertThat(interrupted.get()).isFalse();
    }
}
