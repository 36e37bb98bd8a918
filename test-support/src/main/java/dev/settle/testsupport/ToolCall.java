package dev.settle.testsupport;

/** One function call the assistant asks for, as in OpenAI's {@code tool_calls}: id, function name, JSON arguments. */
public record ToolCall(String id, String name, String argumentsJson) {}
