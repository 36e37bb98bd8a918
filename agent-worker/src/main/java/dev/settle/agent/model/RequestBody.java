package dev.settle.agent.model;

import java.net.http.HttpRequest;
import java.nio.ByteBuffer;
import java.nio.CharBuffer;
import java.nio.charset.CharsetEncoder;
import java.nio.charset.CodingErrorAction;
import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;

import static java.nio.charset.StandardCharsets.UTF_8;

/**
 * A request body sent as the UTF-8 of a string that the caller keeps anyway, encoded chunk by chunk as the
 * connection takes it: the body exists once, as that string. {@code BodyPublishers.ofString} keeps two more copies
 * for as long as the exchange lasts (its byte array, and the buffers it copies that into for sending), which for a
 * model call is the whole wait for the model. The bytes and the Content-Length are those of
 * {@code body.getBytes(UTF_8)} (a lone surrogate is sent as {@code ?}).
 */
final class RequestBody {
    /** Characters encoded per chunk (at most 12 KB of UTF-8). */
    static final int CHUNK_CHARS = 4096;

    private RequestBody() {}

    static HttpRequest.BodyPublisher of(String body) {
        if (body.isEmpty()) {
            return HttpRequest.BodyPublishers.noBody();
        }
        return HttpRequest.BodyPublishers.fromPublisher(
                HttpRequest.BodyPublishers.ofByteArrays(() -> new Chunks(body)), utf8Length(body));
    }

    /** {@code body.getBytes(UTF_8).length}, counted without encoding. */
    static long utf8Length(String body) {
        long n = 0;
        for (int i = 0; i < body.length(); i++) {
            char c = body.charAt(i);
            if (c < 0x80) {
                n += 1;
            } else if (c < 0x800) {
                n += 2;
            } else if (Character.isHighSurrogate(c)
                    && i + 1 < body.length()
                    && Character.isLowSurrogate(body.charAt(i + 1))) {
                n += 4;
                i++;
            } else if (Character.isSurrogate(c)) {
                n += 1; // a lone surrogate is replaced by '?'
            } else {
                n += 3;
            }
        }
        return n;
    }

    /** One pass over the body, {@link #CHUNK_CHARS} characters a chunk; drops the string and the encoder at its end. */
    private static final class Chunks implements Iterator<byte[]> {
        private final int length;
        private CharBuffer in;
        private CharsetEncoder encoder = UTF_8.newEncoder()
                .onMalformedInput(CodingErrorAction.REPLACE)
                .onUnmappableCharacter(CodingErrorAction.REPLACE);

        Chunks(String body) {
            this.length = body.length();
            this.in = CharBuffer.wrap(body);
        }

        @Override
        public boolean hasNext() {
            return encoder != null;
        }

        @Override
        public byte[] next() {
            if (encoder == null) {
                throw new NoSuchElementException();
            }
            // at most 3 bytes a character (a surrogate pair is 4 for two): never overflows
            ByteBuffer out = ByteBuffer.allocate(CHUNK_CHARS * 3);
            int end = Math.min(length, in.position() + CHUNK_CHARS);
            boolean last = end == length;
            in.limit(end);
            // a high surrogate at the end of a chunk stays in the input, encoded with its pair in the next chunk
            encoder.encode(in, out, last);
            in.limit(length);
            if (last) {
                encoder.flush(out);
                in = null;
                encoder = null;
            }
            return Arrays.copyOf(out.array(), out.position());
        }
    }
}
