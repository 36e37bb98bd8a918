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
 * the session, reading no events until it exists; from then on it streams like any other. Session ids are per
 * tenant ({@link #SESSION_PK}, the tenant's unique key): another tenant's session with the same id is never found.
 * A {@code Last-Event-ID} given before the session exists means the same as afterwards: the stream starts after
 * that seq.
 *
 * <ol>
 *   <li>On opening, look the session up ({@link #SESSION_PK}), watch it with the instance's {@link EventPoller},
 *       and read what is there already.</li>
 *   <li>Read events with seq greater than the last one sent ({@link #AFTER}), in seq order, whenever the poller saw a
 *       higher committed seq than the stream has read up to. Seqs commit in order (see {@code SessionEvents}), so
 *       nothing can appear later below the last seq read.</li>
 *   <li>Write them, flush, remember the last seq; when there is nothing, block this thread until the poller reports
 *       news, sending a comment now and then so dead connections are noticed. An idle stream sends no statement of
 *       its own.</li>
 *   <li>Stop when the client goes away, after the maximum duration (the client reconnects), or when the application
 *       stops.</li>
 * </ol>
 */
@Component
class EventStream {
    static final String SESSION_PK = "SELECT id FROM chat_session WHERE tenant_id = ? AND external_id = ?";

    static final int LIMIT = 500;

    static final String AFTER = """
            SELECT seq, type, data FROM session_event
             WHERE session_id = ? AND seq > ? ORDER BY seq LIMIT\s""" + LIMIT;

    record Row(long seq, String type, String data) {}

    private final JdbcTemplate jdbc;
    private final EventPoller poller;
    private final IngestSettings.Events settings;

    public EventStream(JdbcTemplate jdbc, EventPoller poller, IngestSettings settings) {
        this.jdbc = jdbc;
        this.poller = poller;
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
        // events up to this seq are read; -1: none read yet
        long read = -1;
        EventPoller.Watch watch = poller.watch(tenant, sessionId, sessionPk(tenant, sessionId));
        try {
            while (System.nanoTime() < deadline && watch.live()) {
                Long sessionPk = watch.pk();
                long committed = watch.committed();
                if (sessionPk != null && (read < 0 || committed > read)) {
                    List<Row> rows = jdbc.query(
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
                    }
                    if (rows.size() < LIMIT) {
                        // every event committed when the poller looked is read (a seq without a row is skipped)
                        read = Math.max(committed, last);
                    }
                    continue;
                }
                if (System.nanoTime() - lastWrite >= settings.keepAlive().toNanos()) {
                    out.write(": keep-alive\n\n".getBytes(StandardCharsets.UTF_8));
                    out.flush();
                    lastWrite = System.nanoTime();
                }
                watch.await(Math.min(deadline, lastWrite + settings.keepAlive().toNanos()));
                if (Thread.currentThread().isInterrupted()) {
                    return;
                }
            }
        } finally {
            poller.unwatch(watch);
        }
    }

    /** @return the session's primary key, or null while the tenant has no session of that id */
    private Long sessionPk(String tenant, String sessionId) {
        List<Long> found = jdbc.queryForList(SESSION_PK, Long.class, tenant, sessionId);
        return found.isEmpty() ? null : found.getFirst();
    }
}
