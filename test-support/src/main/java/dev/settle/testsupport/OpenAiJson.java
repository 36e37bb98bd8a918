package dev.settle.testsupport;

import tools.jackson.databind.json.JsonMapper;
import tools.jackson.databind.node.ArrayNode;
import tools.jackson.databind.node.ObjectNode;

import java.util.ArrayList;
import java.util.List;

/** Builds OpenAI chat-completions payloads: the full completion, the stream's chunks, and error bodies. */
final class OpenAiJson {
    private static final JsonMapper JSON = JsonMapper.shared();

    private OpenAiJson() {}

    /** A {@code chat.completion} object. */
    static String completion(ModelRequest req, ModelResponse resp) {
        ObjectNode message = JSON.createObjectNode().put("role", "assistant");
        if (resp.kind == ModelResponse.Kind.TOOL_CALLS) {
            message.putNull("content");
            ArrayNode calls = message.putArray("tool_calls");
            for (ToolCall call : resp.toolCalls) {
                ObjectNode c = calls.addObject().put("id", call.id()).put("type", "function");
                c.putObject("function").put("name", call.name()).put("arguments", call.argumentsJson());
            }
        } else {
            message.put("content", resp.text);
        }
        message.putNull("refusal");
        ObjectNode root = envelope(req, "chat.completion");
        ObjectNode choice = root.putArray("choices").addObject().put("index", 0);
        choice.set("message", message);
        choice.putNull("logprobs").put("finish_reason", resp.finishReason);
        root.set("usage", usage(req, resp));
        return root.toString();
    }

    /**
     * The {@code chat.completion.chunk} payloads of a stream, without the final {@code [DONE]}: the role chunk,
     * content or tool-call deltas (arguments split over at least two chunks), the finish chunk, and a usage chunk
     * with empty choices when the request asked for {@code stream_options.include_usage}.
     */
    static List<String> chunks(ModelRequest req, ModelResponse resp) {
        List<String> chunks = new ArrayList<>();
        chunks.add(chunk(req, JSON.createObjectNode().put("role", "assistant").put("content", ""), null));
        if (resp.kind == ModelResponse.Kind.TOOL_CALLS) {
            for (int i = 0; i < resp.toolCalls.size(); i++) {
                ToolCall call = resp.toolCalls.get(i);
                ObjectNode head = toolDelta(i).put("id", call.id()).put("type", "function");
                head.putObject("function").put("name", call.name()).put("arguments", "");
                chunks.add(chunk(req, toolCallsDelta(head), null));
                String args = call.argumentsJson() == null ? "" : call.argumentsJson();
                int size = Math.max(1, Math.min(resp.chunkSize, (args.length() + 1) / 2));
                for (String piece : split(args, size)) {
                    ObjectNode delta = toolDelta(i);
                    delta.putObject("function").put("arguments", piece);
                    chunks.add(chunk(req, toolCallsDelta(delta), null));
                }
            }
        } else {
            for (String piece : split(resp.text == null ? "" : resp.text, resp.chunkSize)) {
                chunks.add(chunk(req, JSON.createObjectNode().put("content", piece), null));
            }
        }
        chunks.add(chunk(req, JSON.createObjectNode(), resp.finishReason));
        if (req.includeUsage()) {
            ObjectNode root = envelope(req, "chat.completion.chunk");
            root.putArray("choices");
            root.set("usage", usage(req, resp));
            chunks.add(root.toString());
        }
        return chunks;
    }

    /** An OpenAI-style error body. */
    static String error(int status, String message) {
        String type = switch (status) {
            case 400, 404, 422 -> "invalid_request_error";
            case 401 -> "authentication_error";
            case 403 -> "permission_error";
            case 429 -> "rate_limit_exceeded";
            default -> status >= 500 ? "server_error" : "api_error";
        };
        ObjectNode error = JSON.createObjectNode();
        error.putObject("error")
                .put("message", message)
                .put("type", type)
                .putNull("param")
                .put("code", status == 429 ? "rate_limit_exceeded" : null);
        return error.toString();
    }

    private static ObjectNode envelope(ModelRequest req, String object) {
        return JSON.createObjectNode()
                .put("id", "chatcmpl-double-" + req.sequence())
                .put("object", object)
                .put("created", System.currentTimeMillis() / 1000)
                .put("model", req.model() == null ? "model-double" : req.model())
                .put("system_fingerprint", "fp_model_double");
    }

    private static String chunk(ModelRequest req, ObjectNode delta, String finishReason) {
        ObjectNode root = envelope(req, "chat.completion.chunk");
        ObjectNode choice = root.putArray("choices").addObject().put("index", 0);
        choice.set("delta", delta);
        choice.putNull("logprobs").put("finish_reason", finishReason);
        return root.toString();
    }

    private static ObjectNode toolDelta(int index) {
        return JSON.createObjectNode().put("index", index);
    }

    private static ObjectNode toolCallsDelta(ObjectNode toolDelta) {
        ObjectNode delta = JSON.createObjectNode();
        delta.putArray("tool_calls").add(toolDelta);
        return delta;
    }

    private static ObjectNode usage(ModelRequest req, ModelResponse resp) {
        int prompt = resp.promptTokens != null ? resp.promptTokens : roughPromptTokens(req);
        int completion = resp.completionTokens != null ? resp.completionTokens : roughCompletionTokens(resp);
        ObjectNode usage = JSON.createObjectNode()
                .put("prompt_tokens", prompt)
                .put("completion_tokens", completion)
                .put("total_tokens", prompt + completion);
        if (resp.cachedTokens != null) {
            usage.putObject("prompt_tokens_details").put("cached_tokens", Math.min(prompt, resp.cachedTokens));
        }
        return usage;
    }

    static int roughPromptTokens(ModelRequest req) {
        int chars = req.messages().stream().mapToInt(m -> length(m.content())).sum();
        return Math.max(1, (chars + 3) / 4);
    }

    private static int roughCompletionTokens(ModelResponse resp) {
        int chars = resp.kind == ModelResponse.Kind.TOOL_CALLS
                ? resp.toolCalls.stream()
                        .mapToInt(c -> length(c.name()) + length(c.argumentsJson()))
                        .sum()
                : length(resp.text);
        return (chars + 3) / 4;
    }

    private static int length(String s) {
        return s == null ? 0 : s.length();
    }

    /** Splits into pieces of {@code size} code points (never between a surrogate pair). */
    static List<String> split(String text, int size) {
        List<String> pieces = new ArrayList<>();
        int start = 0;
        while (start < text.length()) {
            int end = text.offsetByCodePoints(start, Math.min(size, text.codePointCount(start, text.length())));
            pieces.add(text.substring(start, end));
            start = end;
        }
        return pieces;
    }
}
