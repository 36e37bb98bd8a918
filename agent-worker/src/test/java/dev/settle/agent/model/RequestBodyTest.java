package dev.settle.agent.model;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayOutputStream;
import java.net.http.HttpRequest;
import java.nio.ByteBuffer;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.Flow;
import java.util.concurrent.TimeUnit;

import static java.nio.charset.StandardCharsets.UTF_8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * A model request's body, encoded as the connection takes it, is byte for byte {@code getBytes(UTF_8)} with that
 * length as its Content-Length: across chunk boundaries, for multi-byte characters, for a surrogate pair split by a
 * boundary, for lone surrogates, and every time the client reads it again.
 */
class RequestBodyTest {
    private static final int N = RequestBody.CHUNK_CHARS;

    @Test
    void ascii_over_several_chunks() {
        assertSent("{\"model\":\"m\",\"messages\":[" + "x".repeat(3 * N + 17) + "]}");
    }

    @Test
    void multi_byte_characters() {
        assertSent("é€中".repeat(N));
    }

    @Test
    void a_surrogate_pair_across_a_chunk_boundary() {
        assertSent("a".repeat(N - 1) + "😀" + "b".repeat(N) + "😀");
        assertSent("😀".repeat(N + 1));
    }

    @Test
    void lone_surrogates_are_sent_as_question_marks() {
        assertSent("a" + '\uD83D' + "b" + '\uDE00' + "c" + "x".repeat(N - 5) + '\uD83D');
        assertSent(String.valueOf('\uD83D'));
    }

    @Test
    void short_and_empty_bodies() {
        assertSent("{}");
        assertSent("");
    }

    private static void assertSent(String body) {
        byte[] expected = body.getBytes(UTF_8);
        HttpRequest.BodyPublisher publisher = RequestBody.of(body);
        assertEquals(expected.length, publisher.contentLength(), "Content-Length");
        assertArrayEquals(expected, read(publisher), "first read");
        assertArrayEquals(expected, read(publisher), "read again");
    }

    private static byte[] read(HttpRequest.BodyPublisher publisher) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        CompletableFuture<byte[]> done = new CompletableFuture<>();
        publisher.subscribe(new Flow.Subscriber<>() {
            @Override
            public void onSubscribe(Flow.Subscription s) {
                s.request(Long.MAX_VALUE);
            }

            @Override
            public void onNext(ByteBuffer item) {
                byte[] b = new byte[item.remaining()];
                item.get(b);
                out.writeBytes(b);
            }

            @Override
            public void onError(Throwable t) {
                done.completeExceptionally(t);
            }

            @Override
            public void onComplete() {
                done.complete(out.toByteArray());
            }
        });
        return done.orTimeout(5, TimeUnit.SECONDS).join();
    }
}
