package dev.settle.ingest.accept;

import dev.settle.ingest.IngestSettings;
import dev.settle.ingest.http.ApiAccess;
import dev.settle.ingest.http.ApiKeyFilter;
import dev.settle.ingest.http.Caller;
import dev.settle.ingest.http.RateBucket;
import dev.settle.ingest.http.SessionId;
import dev.settle.ingest.views.SessionViews;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import jakarta.servlet.http.HttpServletRequest;
import jakarta.servlet.http.HttpServletResponse;
import org.springframework.http.HttpStatus;
import org.springframework.http.MediaType;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.PutMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RestController;
import tools.jackson.databind.json.JsonMapper;

import java.io.IOException;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentMap;

/**
 * What a client changes in a session ({@code /v1/sessions/{id}}): its messages, its policy, a retry, and the hint
 * that its user is typing.
 */
@RestController
@ApiAccess(Caller.Role.TENANT)
@RequestMapping("/v1/sessions/{sessionId}")
public class SessionWriteController {
    private static final JsonMapper JSON = JsonMapper.builder().build();
    private final IngestSettings settings;
    private final MessageAcceptance acceptance;
    private final AcceptedEventPublisher publisher;
    private final SessionViews views;
    private final SessionPolicies policies;
    private final FailedTurnRetry retries;
    private final TypingSignals typing;
    private final MeterRegistry meters;
    /** {@code settle.messages.accepted} by tenant, looked up once per tenant instead of once per message. */
    private final ConcurrentMap<String, Counter> acceptedByTenant = new ConcurrentHashMap<>();

    public SessionWriteController(
            IngestSettings settings,
            MessageAcceptance acceptance,
            AcceptedEventPublisher publisher,
            SessionViews views,
            SessionPolicies policies,
            FailedTurnRetry retries,
            TypingSignals typing,
            MeterRegistry meters) {
        this.settings = settings;
        this.acceptance = acceptance;
        this.publisher = publisher;
        this.views = views;
        this.policies = policies;
        this.retries = retries;
        this.typing = typing;
        this.meters = meters;
    }

    /**
     * 202 only after the message committed; the event to the debounce worker follows the commit. The answer is
     * written here as {@code application/json}, whatever the request's {@code Accept}: once the message is committed
     * its 202 is the only true answer (a 406 would tell the client that a stored message was refused).
     */
    @PostMapping(value = "/messages")
    public void post(
            @RequestAttribute(ApiKeyFilter.TENANT) String tenant,
            @PathVariable String sessionId,
            HttpServletRequest request,
            HttpServletResponse response)
            throws IOException {
        MessageRequest message = MessageRequest.read(sessionId, request, settings);
        MessageAcceptance.Accepted accepted = acceptance.accept(tenant, message);
        if (!accepted.replay()) {
            acceptedByTenant
                    .computeIfAbsent(tenant, t -> meters.counter("settle.messages.accepted", "tenant", t))
                    .increment();
            publisher.publish(accepted);
        }
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("sessionId", accepted.sessionId());
        body.put("messageId", accepted.messageId());
        body.put("version", accepted.version());
        byte[] json = JSON.writeValueAsBytes(body);
        response.setStatus(HttpStatus.ACCEPTED.value());
        response.setContentType(MediaType.APPLICATION_JSON_VALUE);
        response.setContentLength(json.length);
        response.getOutputStream().write(json);
    }

    /** Sets the session's double-texting policy (creates the session when it does not exist yet). */
    @PutMapping
    public Map<String, Object> update(
            @RequestAttribute(ApiKeyFilter.TENANT) String tenant,
            @PathVariable String sessionId,
            HttpServletRequest request)
            throws IOException {
        String policy = PolicyRequest.read(request, settings);
        policies.set(tenant, SessionId.check(sessionId), policy);
        return views.session(tenant, sessionId).body();
    }

    /** Answers again a session whose last turn failed (409 when nothing failed). */
    @PostMapping("/retry")
    public ResponseEntity<Map<String, Object>> retry(
            @RequestAttribute(ApiKeyFilter.TENANT) String tenant, @PathVariable String sessionId) {
        views.session(tenant, SessionId.check(sessionId));
        MessageAcceptance.Accepted session = retries.retry(tenant, sessionId);
        publisher.publish(session);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("sessionId", sessionId);
        body.put("version", session.version());
        return ResponseEntity.status(HttpStatus.ACCEPTED).body(body);
    }

    /**
     * The user is typing: 202 for any valid call, whether or not the session exists in the caller's tenant; nothing
     * is stored and no session is created ({@link TypingSignals}). Typing signals draw from a rate bucket of their own,
     * so a tenant's typists never spend its messages' tokens.
     */
    @PostMapping("/typing")
    @RateBucket(RateBucket.Bucket.TYPING)
    public ResponseEntity<Void> typing(
            @RequestAttribute(ApiKeyFilter.TENANT) String tenant,
            @PathVariable String sessionId,
            HttpServletRequest request)
            throws IOException {
        TypingRequest.check(sessionId, request, settings);
        typing.signal(tenant, sessionId);
        return ResponseEntity.status(HttpStatus.ACCEPTED).build();
    }
}
