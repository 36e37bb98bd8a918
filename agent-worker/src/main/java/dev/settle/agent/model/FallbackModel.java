package dev.settle.agent.model;

import dev.langchain4j.model.chat.StreamingChatModel;

/**
 * The model of a deployment without {@code settle.llm.url}, when a room of the application provides one (the demo
 * does). Without it, the URL is required.
 *
 * @param description what the startup log calls it
 */
public record FallbackModel(StreamingChatModel model, String description) {}
