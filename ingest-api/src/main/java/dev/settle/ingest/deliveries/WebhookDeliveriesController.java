package dev.settle.ingest.deliveries;

import dev.settle.ingest.http.ApiAccess;
import dev.settle.ingest.http.ApiKeyFilter;
import dev.settle.ingest.http.ApiProblem;
import dev.settle.ingest.http.Caller;
import dev.settle.ingest.http.Paging;
import dev.settle.ingest.http.SessionId;
import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import java.util.Map;

/**
 * The webhook dead letters and their replay ({@code /v1/webhooks/deliveries}), behind the same bearer key as the
 * rest of {@code /v1/}.
 *
 * <ul>
 *   <li>{@code GET ?status=failed|pending|delivered&sessionId=&after=&limit=}: newest first, each with its
 *       attempts, a page at a time (see {@link Paging}). {@code after} continues the list after that delivery id
 *       (older ones, as the list runs newest first); {@code next} is the {@code after} of the next page, null on
 *       the last. {@code before}/{@code nextBefore} are the same cursor under their earlier names.</li>
 *   <li>{@code POST /{id}/retry}: FAILED → PENDING, due now, same webhook-id (202); unknown → 404; pending or
 *       delivered → 409.</li>
 * </ul>
 */
@RestController
@ApiAccess(Caller.Role.TENANT)
@RequestMapping("/v1/webhooks/deliveries")
public class WebhookDeliveriesController {
    private final WebhookDeliveries deliveries;
    private final DeliveryReplay replay;

    public WebhookDeliveriesController(WebhookDeliveries deliveries, DeliveryReplay replay) {
        this.deliveries = deliveries;
        this.replay = replay;
    }

    @GetMapping
    public Map<String, Object> list(
            @RequestAttribute(ApiKeyFilter.TENANT) String tenant,
            @RequestParam(required = false) String status,
            @RequestParam(required = false) String sessionId,
            @RequestParam(required = false) String limit,
            @RequestParam(required = false) String after,
            @RequestParam(required = false) String before) {
        WebhookDeliveries.Status wanted = status == null ? null : WebhookDeliveries.Status.parse(status);
        if (sessionId != null) {
            SessionId.check(sessionId);
        }
        int rows = Paging.limit(limit);
        if (after != null && before != null) {
            throw ApiProblem.badRequest("invalid-after", "after and before are the same cursor: give one of them");
        }
        Long cursor = after != null
                ? Paging.afterId(after)
                : before == null ? null : Paging.positive("before", before, Long.MAX_VALUE);
        Map<String, Object> body = Paging.page(
                "deliveries", deliveries.list(tenant, wanted, sessionId, cursor, rows + 1), rows, d -> d.get("id"));
        body.put("nextBefore", body.get("next"));
        return body;
    }

    @PostMapping("/{id}/retry")
    public ResponseEntity<Map<String, Object>> retry(
            @RequestAttribute(ApiKeyFilter.TENANT) String tenant, @PathVariable String id) {
        long deliveryId = deliveryId(id);
        return switch (replay.retry(tenant, deliveryId)) {
            case REQUEUED -> ResponseEntity.status(HttpStatus.ACCEPTED).body(deliveries.one(tenant, deliveryId));
            case NOT_FOUND -> throw ApiProblem.notFound("no webhook delivery " + deliveryId);
            case PENDING ->
                throw ApiProblem.conflict(
                        "delivery-not-failed",
                        "webhook delivery " + deliveryId + " is pending: only failed deliveries can be retried");
            case DELIVERED ->
                throw ApiProblem.conflict(
                        "delivery-not-failed",
                        "webhook delivery " + deliveryId + " is delivered: only failed deliveries can be retried");
        };
    }

    private static long deliveryId(String id) {
        try {
            long value = Long.parseLong(id);
            if (value > 0) {
                return value;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw ApiProblem.badRequest(
                "invalid-delivery-id",
                "a delivery id is a positive integer, as listed by " + "GET /v1/webhooks/deliveries");
    }
}
