package dev.settle.agent.turn;

/**
 * The system prompt of a deployment that sets no {@code settle.agent.system-prompt}, when a room of the application
 * provides one (the demo does); without it, {@link PromptBuilder#NEUTRAL}.
 */
public record DefaultSystemPrompt(String text) {}
