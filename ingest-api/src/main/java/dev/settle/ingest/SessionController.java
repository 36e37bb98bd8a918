package dev.settle.ingest;

import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestHeader;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;

/** The public HTTP contract of Settle's ingest API ({@code /v1/sessions/...}). */
@RestController
@ApiAccess(Caller.Role.TENANT)
@RequestMapping("/v1/sessions/{sessionId}")
public class SessionController {
    private final IngestSettings settings;
    private final MessageAcceptance acceptance;
    private final AcceptedEventPublisher publisher;
    private final SessionViews views;
    private final EventStream events;
    private final EventStreamSlots slots;
    private final SessionPolicies policies;
    private final FailedTurnRetry retries;
    private final io.micrometer.core.instrument.MeterRegistry meters;

    public SessionController(IngestSettings settings, MessageAcceptance acceptance,
                             AcceptedEventPublisher publisher, SessionViews views, EventStream events,
                             EventStreamSlots slots,
                             SessionPolicies policies, FailedTurnRetry retries,
                             io.micrometer.core.instrument.MeterRegistry meters) {
        this.meters = meters;
        this.retries = retries;
        this.events = events;
        this.slots = slots;
        this.policies = policies;
        this.settings = settings;
        this.acceptance = acceptance;
        this.publisher = publisher;
        this.views = views;
    }

    /** 202 only after the message committed; the event to the debounce worker follows the commit. */
    @PostMapping(value = "/messages")
    public ResponseEntity<Map<String, Object>> post(@RequestAttribute(ApiKeyFilter.TENANT) String tenant, @PathVariable String sessionId, HttpServletRequest request)
            throws IOException {
        MessageRequest message = MessageRequest.read(sessionId, request, settings);
        MessageAcceptance.Accepted accepted = acceptance.accept(tenant, message);
        if (!accepted.replay()) {
            meters.counter("settle.messages.accepted", "tenant", tenant).increment();
            publisher.publish(accepted);
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("sessionId", accepted.sessionId());
        body.put("messageId", accepted.messageId());
        body.put("version", accepted.version());
        return ResponseEntity.status(HttpStatus.ACCEPTED).body(body);
    }

    @GetMapping
    public Map<String, Object> session(@RequestAttribute(ApiKeyFilter.TENANT) String tenant, @PathVariable String sessionId) {
        return views.session(tenant, MessageRequest.checkSessionId(sessionId)).body();
    }

    /**
     * Messages and tool steps in order, a page at a time ({@code ?after=&limit=}, see {@link Paging}); a client that
     * refreshes mid-turn sees what is happening.
     */
    @GetMapping("/messages")
    public Map<String, Object> messages(@RequestAttribute(ApiKeyFilter.TENANT) String tenant, @PathVariable String sessionId,
                                        @RequestParam(required = false) String after,
                                        @RequestParam(required = false) String limit) {
        int rows = Paging.limit(limit);
        long[] from = SessionViews.messagesAfter(after);
        SessionViews.SessionView session = views.session(tenant, MessageRequest.checkSessionId(sessionId));
        return views.messages(session.pk(), from, rows);
    }

    /**
     * Server-Sent Events of the session: message.accepted, turn.started, reply.delta, tool.started,
     * tool.completed, turn.discarded, reply.created, turn.failed, delivery.exhausted (a webhook delivery of the
     * session became FAILED; see docs/WEBHOOKS.md). Resume with {@code Last-Event-ID}. Open streams are bounded
     * per tenant and per instance ({@link EventStreamSlots}): one more is a 429 before anything is streamed.
     */
    @GetMapping("/events")
    public void events(@RequestAttribute(ApiKeyFilter.TENANT) String tenant, @PathVariable String sessionId,
                       @RequestHeader(value = "Last-Event-ID", required = false) String lastEventId,
                       HttpServletResponse response) throws IOException {
        SessionViews.SessionView session = views.session(tenant, MessageRequest.checkSessionId(sessionId));
        long last = 0;
        if (lastEventId != null && !lastEventId.isBlank()) {
            try {
                last = Long.parseLong(lastEventId.trim());
            } catch (NumberFormatException e) {
                throw ApiProblem.badRequest("invalid-last-event-id", "Last-Event-ID must be an event id from this stream");
            }
        }
        try (EventStreamSlots.Slot slot = slots.acquire(tenant)) {
            events.stream(session.pk(), Math.max(0, last), response);
        }
    }

    /** Sets the session's double-texting policy (creates the session when it does not exist yet). */
    @PutMapping
    public Map<String, Object> update(@RequestAttribute(ApiKeyFilter.TENANT) String tenant, @PathVariable String sessionId, HttpServletRequest request) throws IOException {
        String policy = PolicyRequest.read(request, settings);
        policies.set(tenant, MessageRequest.checkSessionId(sessionId), policy);
        return views.session(tenant, sessionId).body();
    }

    /** Answers again a session whose last turn failed (409 when nothing failed). */
    @PostMapping("/retry")
    public ResponseEntity<Map<String, Object>> retry(@RequestAttribute(ApiKeyFilter.TENANT) String tenant, @PathVariable String sessionId) {
        views.session(tenant, MessageRequest.checkSessionId(sessionId));
        MessageAcceptance.Accepted session = retries.retry(tenant, sessionId);
        publisher.publish(session);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("sessionId", sessionId);
        body.put("version", session.version());
        return ResponseEntity.status(HttpStatus.ACCEPTED).body(body);
    }

    /**
     * Every attempt to answer, with its state: RUNNING, COMMITTED, DISCARDED or FAILED; oldest first, a page at a
     * time ({@code ?after=&limit=}, see {@link Paging}).
     */
    @GetMapping("/turns")
    public Map<String, Object> turns(@RequestAttribute(ApiKeyFilter.TENANT) String tenant, @PathVariable String sessionId,
                                     @RequestParam(required = false) String after,
                                     @RequestParam(required = false) String limit) {
        int rows = Paging.limit(limit);
        Long from = Paging.afterId(after);
        SessionViews.SessionView session = views.session(tenant, MessageRequest.checkSessionId(sessionId));
        return views.turns(session.pk(), from, rows);
    }
}
