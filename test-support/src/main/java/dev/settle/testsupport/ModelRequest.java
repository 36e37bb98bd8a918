package dev.settle.testsupport;

import tools.jackson.databind.JsonNode;
import tools.jackson.databind.json.JsonMapper;

import java.util.ArrayList;
import java.util.List;
import java.util.stream.Collectors;

/**
 * One chat-completions request as {@link ModelDouble} received it: the parsed messages, whether it asked for a
 * stream, the names of the offered tools, the raw JSON body and a 1-based sequence number (per double, since the
 * last {@link ModelDouble#reset()}).
 */
public record ModelRequest(
        int sequence,
        String model,
        List<Msg> messages,
        boolean stream,
        boolean includeUsage,
        List<String> toolNames,
        String body) {

    /**
     * One message of the conversation. {@code content} is the text (text parts of a multi-part content joined by
     * newlines; null when absent), {@code toolCalls} the assistant's calls (empty if none), {@code toolCallId} set on
     * {@code role = "tool"} results.
     */
    public record Msg(String role, String content, List<ToolCall> toolCalls, String toolCallId) {}

    /** The content of the last {@code user} message, or null when there is none. */
    public String lastUserText() {
        for (int i = messages.size() - 1; i >= 0; i--) {
            if ("user".equals(messages.get(i).role())) {
                return messages.get(i).content();
            }
        }
        return null;
    }

    /** The contents of the {@code user} messages after the last {@code assistant} message, joined by newlines. */
    public String allUserTextSinceLastAssistant() {
        int lastAssistant = -1;
        for (int i = 0; i < messages.size(); i++) {
            if ("assistant".equals(messages.get(i).role())) {
                lastAssistant = i;
            }
        }
        return messages.subList(lastAssistant + 1, messages.size()).stream()
                .filter(m -> "user".equals(m.role()) && m.content() != null)
                .map(Msg::content)
                .collect(Collectors.joining("\n"));
    }

    /** The raw body as a Jackson tree, for anything the record does not expose (temperature, tool schemas...). */
    public JsonNode json() {
        return JsonMapper.shared().readTree(body);
    }

    /** Parses a request body; throws Jackson's exception when it is not JSON. */
    static ModelRequest parse(int sequence, String body) {
        JsonNode root = JsonMapper.shared().readTree(body);
        List<Msg> messages = new ArrayList<>();
        for (JsonNode m : root.path("messages")) {
            messages.add(new Msg(
                    string(m.path("role")),
                    content(m.path("content")),
                    toolCalls(m.path("tool_calls")),
                    string(m.path("tool_call_id"))));
        }
        List<String> toolNames = new ArrayList<>();
        for (JsonNode tool : root.path("tools")) {
            String name = string(tool.path("function").path("name"));
            if (name != null) {
                toolNames.add(name);
            }
        }
        return new ModelRequest(
                sequence,
                string(root.path("model")),
                List.copyOf(messages),
                root.path("stream").asBoolean(false),
                root.path("stream_options").path("include_usage").asBoolean(false),
                List.copyOf(toolNames),
                body);
    }

    private static String content(JsonNode content) {
        if (!content.isArray()) {
            return string(content);
        }
        List<String> texts = new ArrayList<>();
        for (JsonNode part : content) {
            if (part.path("text").isString()) {
                texts.add(part.path("text").stringValue());
            }
        }
        return String.join("\n", texts);
    }

    private static List<ToolCall> toolCalls(JsonNode calls) {
        List<ToolCall> result = new ArrayList<>();
        for (JsonNode call : calls) {
            JsonNode function = call.path("function");
            result.add(new ToolCall(
                    string(call.path("id")), string(function.path("name")), string(function.path("arguments"))));
        }
        return List.copyOf(result);
    }

    private static String string(JsonNode node) {
        return node.isString() ? node.stringValue() : null;
    }
}
