package dev.settle.agent.tools;

import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;

/**
 * Marks a langchain4j {@code @Tool} method that changes the world. Such a tool runs only through
 * {@link ExactlyOnceToolExecutor}: at most once per intended call, its effect committed in the same
 * transaction as its COMPLETED record, fenced by the session lease. Its writes must go through the Spring
 * {@code JdbcTemplate} (so they join that transaction) and should reference {@link ToolCallContext#executionId()}.
 * An effect outside that transaction (an HTTP API, a mail server) is attempted at least once: pass
 * {@link ToolCallContext#idempotencyKey()} to it as its idempotency key (see docs/TOOLS.md).
 */
@Documented
@Retention(RetentionPolicy.RUNTIME)
@Target(ElementType.METHOD)
public @interface SideEffect {}
