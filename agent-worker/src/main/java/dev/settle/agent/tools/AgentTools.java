package dev.settle.agent.tools;

/**
 * Marker for Spring beans whose langchain4j {@code @Tool} methods are offered to the model. Read-only
 * tools run directly; tools annotated {@link SideEffect} run exactly once through the executor.
 */
public interface AgentTools {}
