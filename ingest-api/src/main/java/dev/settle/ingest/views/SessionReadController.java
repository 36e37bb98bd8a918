package dev.settle.ingest.views;

import dev.settle.ingest.http.ApiAccess;
import dev.settle.ingest.http.ApiKeyFilter;
import dev.settle.ingest.http.ApiProblem;
import dev.settle.ingest.http.Caller;
import dev.settle.ingest.http.Paging;
import dev.settle.ingest.http.SessionId;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import java.io.IOException;
import java.util.Map;

/** What a client reads of a session ({@code /v1/sessions/{id}}): its state, conversation, events and turns. */
@RestController
@ApiAccess(Caller.Role.TENANT)
@RequestMapping("/v1/sessions/{sessionId}")
public class SessionReadController {
    private final SessionViews views;
    private final EventStream events;
    private final EventStreamSlots slots;

    public SessionReadController(SessionViews views, EventStream events, EventStreamSlots slots) {
        this.views = views;
        this.events = events;
        this.slots = slots;
    }

    @GetMapping
    public Map<String, Object> session(
            @RequestAttribute(ApiKeyFilter.TENANT) String tenant, @PathVariable String sessionId) {
        return views.session(tenant, SessionId.check(sessionId)).body();
    }

    /**
     * Messages and tool steps in order, a page at a time ({@code ?after=&limit=}, see {@link Paging}); a client that
     * refreshes mid-turn sees what is happening.
     */
    @GetMapping("/messages")
    public Map<String, Object> messages(
            @RequestAttribute(ApiKeyFilter.TENANT) String tenant,
            @PathVariable String sessionId,
            @RequestParam(required = false) String after,
            @RequestParam(required = false) String limit) {
        int rows = Paging.limit(limit);
        long[] from = SessionViews.messagesAfter(after);
        SessionViews.SessionView session = views.session(tenant, SessionId.check(sessionId));
        return views.messages(session.pk(), from, rows);
    }

    /**
     * Server-Sent Events of the session: message.accepted, turn.started, reply.delta, tool.started,
     * tool.completed, turn.discarded, reply.created, turn.failed, turn.abandoned, delivery.exhausted (a webhook delivery of the
     * session became FAILED; see docs/WEBHOOKS.md). Resume with {@code Last-Event-ID}. A session id the tenant has
     * not used yet is streamed as well: the stream waits for the session and streams it from its first event (see
     * {@link EventStream}), so a client can open it before the first message. Open streams are bounded
     * per tenant and per instance ({@link EventStreamSlots}): one more is a 429 before anything is streamed.
     */
    @GetMapping("/events")
    public void events(
            @RequestAttribute(ApiKeyFilter.TENANT) String tenant,
            @PathVariable String sessionId,
            @RequestHeader(value = "Last-Event-ID", required = false) String lastEventId,
            HttpServletResponse response)
            throws IOException {
        String checked = SessionId.check(sessionId);
        long last = 0;
        if (lastEventId != null && !lastEventId.isBlank()) {
            try {
                last = Long.parseLong(lastEventId.trim());
            } catch (NumberFormatException e) {
                throw ApiProblem.badRequest(
                        "invalid-last-event-id", "Last-Event-ID must be an event id from this stream");
            }
        }
        try (EventStreamSlots.Slot slot = slots.acquire(tenant)) {
            events.stream(tenant, checked, Math.max(0, last), response);
        }
    }

    /**
     * Every attempt to answer, with its state: RUNNING, COMMITTED, DISCARDED or FAILED; oldest first, a page at a
     * time ({@code ?after=&limit=}, see {@link Paging}).
     */
    @GetMapping("/turns")
    public Map<String, Object> turns(
            @RequestAttribute(ApiKeyFilter.TENANT) String tenant,
            @PathVariable String sessionId,
            @RequestParam(required = false) String after,
            @RequestParam(required = false) String limit) {
        int rows = Paging.limit(limit);
        Long from = Paging.afterId(after);
        SessionViews.SessionView session = views.session(tenant, SessionId.check(sessionId));
        return views.turns(session.pk(), from, rows);
    }
}
