package dev.settle.agent.tools;

import dev.langchain4j.agent.tool.Tool;
import dev.settle.agent.demo.BookkeepingTools;
import org.springframework.jdbc.core.JdbcTemplate;

import java.math.BigDecimal;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

/**
 * Test tools that stop where a paused holder would (a GC pause, a stalled VM): after the side effect and
 * before the executor records the result. {@link #arm()} makes the next call wait until {@link #resume()}.
 */
public final class PausingTools implements AgentTools {
    volatile JdbcTemplate jdbc;
    private volatile CountDownLatch entered = new CountDownLatch(1);
    private volatile CountDownLatch resume = new CountDownLatch(0);

    public void arm() {
        entered = new CountDownLatch(1);
        resume = new CountDownLatch(1);
    }

    /** @return true when the armed call reached its pause */
    public boolean awaitPaused() throws InterruptedException {
        return entered.await(30, TimeUnit.SECONDS);
    }

    public void resume() {
        resume.countDown();
    }

    private void pause() {
        entered.countDown();
        try {
            if (!resume.await(60, TimeUnit.SECONDS)) {
                throw new IllegalStateException("never resumed");
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(e);
        }
    }

    @SideEffect
    @Tool(name = "pausing_booking", value = "Books an expense under 'other', then pauses when armed (test only).")
    public String pausingBooking(BigDecimal amount) {
        jdbc.update(
                BookkeepingTools.INSERT,
                ToolCallContext.sessionId(),
                ToolCallContext.executionId(),
                amount,
                "other",
                "paused");
        pause();
        return "booked " + amount.toPlainString();
    }

    @Tool(name = "pausing_lookup", value = "Looks something up, pausing when armed (test only).")
    public String pausingLookup() {
        pause();
        return "looked up";
    }
}
