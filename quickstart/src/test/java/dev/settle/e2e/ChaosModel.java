package dev.settle.e2e;

import dev.settle.testsupport.ModelRequest;
import dev.settle.testsupport.ModelResponse;
import dev.settle.testsupport.ToolCall;

import java.time.Duration;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Random;
import java.util.Set;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The chaos run's model: books every "book N" of the unanswered messages that has no successful result yet
 * (re-asking after a failed result, as a real model would), then answers in streamed words. Its health is
 * switched by the fault injector: normal, erroring, slow or hanging.
 */
final class ChaosModel {
    enum Mode {
        NORMAL,
        ERRORS,
        SLOW,
        HANG
    }

    private static final Pattern BOOK = Pattern.compile("book (\\d+)");
    volatile Mode mode = Mode.NORMAL;
    private final Random random = new Random(11);

    ModelResponse answer(ModelRequest request) {
        Mode now = mode;
        synchronized (random) {
            if (now == Mode.ERRORS && random.nextInt(3) > 0) {
                return random.nextBoolean()
                        ? ModelResponse.error(500)
                        : ModelResponse.error(429).retryAfter("0");
            }
            if (now == Mode.HANG && random.nextInt(3) == 0) {
                return ModelResponse.hang();
            }
        }
        List<String> pending = new ArrayList<>();
        Set<String> booked = new HashSet<>();
        for (ModelRequest.Msg m : request.messages()) {
            if ("assistant".equals(m.role())
                    && (m.toolCalls() == null || m.toolCalls().isEmpty())) {
                pending.clear();
                booked.clear();
            } else if ("user".equals(m.role())) {
                pending.add(m.content());
            } else if ("tool".equals(m.role())
                    && m.content() != null
                    && m.content().startsWith("booked")) {
                Matcher amount = Pattern.compile("booked (\\d+)\\.00").matcher(m.content());
                if (amount.find()) {
                    booked.add(amount.group(1));
                }
            }
        }
        List<ToolCall> calls = new ArrayList<>();
        for (String text : pending) {
            Matcher book = BOOK.matcher(text);
            while (book.find()) {
                if (!booked.contains(book.group(1))) {
                    calls.add(new ToolCall(
                            "c" + calls.size(),
                            "create_transaction",
                            "{\"amount\":" + book.group(1) + ",\"category\":\"other\"}"));
                }
            }
        }
        boolean toolsOffered = !request.toolNames().isEmpty();
        if (!calls.isEmpty() && toolsOffered) {
            return ModelResponse.toolCalls(calls);
        }
        StringBuilder text =
                new StringBuilder("answering ").append(pending.size()).append(" messages:");
        for (int i = 0; i < 12; i++) {
            text.append(" w").append(i);
        }
        ModelResponse response = ModelResponse.text(text.toString()).chunkSize(7);
        return now == Mode.SLOW
                ? response.chunkDelay(Duration.ofMillis(120))
                : response.chunkDelay(Duration.ofMillis(10));
    }
}
