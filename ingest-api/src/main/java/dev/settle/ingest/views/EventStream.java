package dev.settle.ingest.views;

import dev.settle.ingest.IngestSettings;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.jdbc.core.JdbcTemplate;
import org.springframework.stereotype.Component;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.List;

/**
 * Serves a session's event log as Server-Sent Events, from the database: it works whichever process wrote
 * the events and whichever ingest-api instance the client reaches. Every event carries its per-session seq
 * as the SSE id; a client that reconnects with {@code Last-Event-ID} gets every later event exactly once.
 *
 * <p>A session id not used yet in the caller's tenant is streamed too: the stream opens at once and waits for
 * the session, looking up its id once per poll interval ({@link #SESSION_PK}, the tenant's unique key) and reading
 * no events until the session exists; from then on it streams like any other. Session ids are per tenant: another
 * tenant's session with the same id is never found. A {@code Last-Event-ID} given before the session exists
 * means the same as afterwards: the stream starts after that seq.
 *
 * <ol>
 *   <li>Read events with seq greater than the last one sent ({@link #AFTER}), in seq order. Seqs commit in
 *       order (see {@code SessionEvents}), so nothing can appear later below the last seq read.</li>
 *   <li>Write them, flush, remember the last seq; when there is nothing, sleep one poll interval and send a
 *       comment now and then so dead connections are noticed.</li>
 *   <li>Stop when the client goes away or after the maximum duration (the client reconnects).</li>
 * </ol>
 */
@Component
class EventStream {
    static final String SESSION_PK = "SELECT id FROM chat_session WHERE tenant_id = ? AND external_id = ?";

    static final String AFTER = """
            SELECT seq, type, data FROM session_event
             WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT 500""";

    record Row(long seq, String type, String data) {}

    private final JdbcTemplate jdbc;
    private final IngestSettings.Events settings;

    public EventStream(JdbcTemplate jdbc, IngestSettings settings) {
        this.jdbc = jdbc;
        this.settings = settings.events();
    }

    /** Streams the session {@code sessionId} of {@code tenant} after seq {@code lastSeq}, waiting for it if needed. */
    public void stream(String tenant, String sessionId, long lastSeq, HttpServletResponse response) throws IOException {
        response.setStatus(200);
        response.setContentType("text/event-stream");
        response.setCharacterEncoding("UTF-8");
        response.setHeader("Cache-Control", "no-store");
        response.setHeader("X-Accel-Buffering", "no");
        OutputStream out = response.getOutputStream();
        out.write(("retry: 1000\n\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
        long deadline = System.nanoTime() + settings.maxDuration().toNanos();
        long lastWrite = System.nanoTime();
        long last = lastSeq;
        Long sessionPk = null;
        while (System.nanoTime() < deadline) {
            if (sessionPk == null) {
                sessionPk = sessionPk(tenant, sessionId);
            }
            List<Row> rows = sessionPk == null
                    ? List.of()
                    : jdbc.query(
                            AFTER,
                            (rs, i) -> new Row(rs.getLong("seq"), rs.getString("type"), rs.getString("data")),
                            sessionPk,
                            last);
            if (!rows.isEmpty()) {
                StringBuilder chunk = new StringBuilder();
                for (Row row : rows) {
                    chunk.append("id: ")
                            .append(row.seq())
                            .append('\n')
                            .append("event: ")
                            .append(row.type())
                            .append('\n')
                            .append("data: ")
                            .append(row.data())
                            .append("\n\n");
                    last = row.seq();
                }
                out.write(chunk.toString().getBytes(StandardCharsets.UTF_8));
                out.flush();
                lastWrite = System.nanoTime();
                continue;
            }
            if (System.nanoTime() - lastWrite > settings.keepAlive().toNanos()) {
                out.write(": keep-alive\n\n".getBytes(StandardCharsets.UTF_8));
                out.flush();
                lastWrite = System.nanoTime();
            }
            try {
                Thread.sleep(settings.pollInterval());
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    /** @return the session's primary key, or null while the tenant has no session of that id */
    private Long sessionPk(String tenant, String sessionId) {
        List<Long> found = jdbc.queryForList(SESSION_PK, Long.class, tenant, sessionId);
        return found.isEmpty() ? null : found.getFirst();
    }
}
