package dev.settle.ingest;

import org.springframework.http.HttpStatus;
import org.springframework.http.ResponseEntity;
import org.springframework.web.bind.annotation.GetMapping;
import org.springframework.web.bind.annotation.PathVariable;
import org.springframework.web.bind.annotation.PostMapping;
import org.springframework.web.bind.annotation.RequestMapping;
import org.springframework.web.bind.annotation.RequestAttribute;
import org.springframework.web.bind.annotation.RequestParam;
import org.springframework.web.bind.annotation.RestController;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The webhook dead letters and their replay ({@code /v1/webhooks/deliveries}), behind the same bearer key as the
 * rest of {@code /v1/}.
 *
 * <ul>
 *   <li>{@code GET ?status=failed|pending|delivered&sessionId=&limit=&before=}: newest first, each with its
 *       attempts; {@code nextBefore} pages on when the page is full.</li>
 *   <li>{@code POST /{id}/retry}: FAILED → PENDING, due now, same webhook-id (202); unknown → 404; pending or
 *       delivered → 409.</li>
 * </ul>
 */
@RestController
@ApiAccess(Caller.Role.TENANT)
@RequestMapping("/v1/webhooks/deliveries")
public class WebhookDeliveriesController {
    static final int DEFAULT_LIMIT = 50;
    static final int MAX_LIMIT = 500;

    private final WebhookDeliveries deliveries;
    private final DeliveryReplay replay;

    public WebhookDeliveriesController(WebhookDeliveries deliveries, DeliveryReplay replay) {
        this.deliveries = deliveries;
        this.replay = replay;
    }

    @GetMapping
    public Map<String, Object> list(@RequestAttribute(ApiKeyFilter.TENANT) String tenant,
                                    @RequestParam(required = false) String status,
                                    @RequestParam(required = false) String sessionId,
                                    @RequestParam(required = false) String limit,
                                    @RequestParam(required = false) String before) {
        WebhookDeliveries.Status wanted = status == null ? null : WebhookDeliveries.Status.parse(status);
        if (sessionId != null) {
            MessageRequest.checkSessionId(sessionId);
        }
        int max = limit == null ? DEFAULT_LIMIT : (int) positive("limit", limit, MAX_LIMIT);
        Long cursor = before == null ? null : positive("before", before, Long.MAX_VALUE);
        List<Map<String, Object>> page = deliveries.list(tenant, wanted, sessionId, cursor, max);
        Map<String, Object> body = new LinkedHashMap<>();
        body.put("deliveries", page);
        body.put("nextBefore", page.size() == max ? page.getLast().get("id") : null);
        return body;
    }

    @PostMapping("/{id}/retry")
    public ResponseEntity<Map<String, Object>> retry(@RequestAttribute(ApiKeyFilter.TENANT) String tenant, @PathVariable String id) {
        long deliveryId = deliveryId(id);
        return switch (replay.retry(tenant, deliveryId)) {
            case REQUEUED -> ResponseEntity.status(HttpStatus.ACCEPTED)
                    .body(deliveries.one(tenant, deliveryId));
            case NOT_FOUND -> throw ApiProblem.notFound("no webhook delivery " + deliveryId);
            case PENDING -> throw ApiProblem.conflict("delivery-not-failed",
                    "webhook delivery " + deliveryId + " is pending: only failed deliveries can be retried");
            case DELIVERED -> throw ApiProblem.conflict("delivery-not-failed",
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
        throw ApiProblem.badRequest("invalid-delivery-id", "a delivery id is a positive integer, as listed by "
                + "GET /v1/webhooks/deliveries");
    }

    private static long positive(String name, String value, long max) {
        try {
            long parsed = Long.parseLong(value.trim());
            if (parsed >= 1 && parsed <= max) {
                return parsed;
            }
        } catch (NumberFormatException e) {
            // refused below
        }
        throw ApiProblem.badRequest("invalid-" + name, name + " must be an integer from 1 to " + max);
    }
}
