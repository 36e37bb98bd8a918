package dev.settle.agent.webhook;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.net.URI;
import java.net.UnknownHostException;

/**
 * The configured {@code SETTLE_WEBHOOK_URL}, checked once at startup: a malformed URL, or a host that resolves
 * into a private network while private networks are not allowed, stops the worker with a clear message. A host
 * that does not resolve right now only logs a warning (DNS may be down at boot): every attempt is checked again.
 *
 * @param url the URL in its ASCII form, as stamped on each delivery; null when none is configured
 */
record DefaultEndpoint(String url) {
    private static final Logger log = LoggerFactory.getLogger(DefaultEndpoint.class);

    public static DefaultEndpoint check(String configured, EndpointGuard guard) {
        if (configured == null || configured.isBlank()) {
            log.warn("SETTLE_WEBHOOK_URL is not set: replies wait in the outbox (webhook_delivery) until it is");
            return new DefaultEndpoint(null);
        }
        URI uri;
        try {
            uri = EndpointGuard.parse(configured);
            guard.check(uri);
        } catch (EndpointGuard.Refused e) {
            throw new IllegalStateException("SETTLE_WEBHOOK_URL (settle.webhook.url) " + e.getMessage(), e);
        } catch (UnknownHostException e) {
            log.warn("SETTLE_WEBHOOK_URL host {} does not resolve now; every attempt checks it again", e.getMessage());
            uri = URI.create(configured.trim());
        }
        return new DefaultEndpoint(uri.toASCIIString());
    }
}
