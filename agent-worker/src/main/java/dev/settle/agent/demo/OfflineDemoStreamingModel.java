package dev.settle.agent.demo;

import dev.langchain4j.model.chat.StreamingChatModel;
import dev.langchain4j.model.chat.request.ChatRequest;
import dev.langchain4j.model.chat.response.ChatResponse;
import dev.langchain4j.model.chat.response.PartialResponse;
import dev.langchain4j.model.chat.response.PartialResponseContext;
import dev.langchain4j.model.chat.response.StreamingChatResponseHandler;
import dev.langchain4j.model.chat.response.StreamingHandle;

import java.util.concurrent.atomic.AtomicBoolean;

/** The offline demo model, streamed: its answer arrives in small deltas (4 characters, 15 ms apart). */
class OfflineDemoStreamingModel implements StreamingChatModel {
    private final OfflineDemoModel model = new OfflineDemoModel();

    @Override
    public void doChat(ChatRequest request, StreamingChatResponseHandler handler) {
        ChatResponse response = model.doChat(request);
        AtomicBoolean cancelled = new AtomicBoolean();
        StreamingHandle handle = new StreamingHandle() {
            @Override
            public void cancel() {
                cancelled.set(true);
            }

            @Override
            public boolean isCancelled() {
                return cancelled.get();
            }
        };
        Thread.ofVirtual().name("offline-demo-stream").start(() -> {
            String text = response.aiMessage().text();
            if (text != null) {
                for (int i = 0; i < text.length() && !cancelled.get(); i += 4) {
                    handler.onPartialResponse(
                            new PartialResponse(text.substring(i, Math.min(text.length(), i + 4))),
                            new PartialResponseContext(handle));
                    try {
                        Thread.sleep(15);
                    } catch (InterruptedException e) {
                        return;
                    }
                }
            }
            if (!cancelled.get()) {
                handler.onCompleteResponse(response);
            }
        });
    }
}
