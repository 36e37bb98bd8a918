package dev.settle.ingest.views;

import dev.settle.ingest.IngestSettings;
import dev.settle.ingest.http.ApiProblem;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import org.springframework.http.HttpStatus;
import org.springframework.stereotype.Component;

import java.util.HashMap;
import java.util.Map;

/**
 * Bounds the open event streams of this ingest instance: at most {@code settle.events.max-per-tenant} per tenant
 * and {@code settle.events.max-per-instance} in all. A stream takes its slot before it starts (one more is a 429
 * problem with Retry-After, and nothing is streamed) and gives it back when it ends, whatever ends it: the
 * client going away, the maximum duration, an error. Counted per instance, like the request rate: with N
 * instances a tenant may hold up to N × max-per-tenant streams.
 */
@Component
class EventStreamSlots {
    /** The Retry-After of a refused stream: slots come back as other streams end, at no known time. */
    static final long RETRY_AFTER_SECONDS = 5;

    private final int perTenant;
    private final int perInstance;
    private final Map<String, Integer> byTenant = new HashMap<>();
    private int open;

    public EventStreamSlots(IngestSettings settings, MeterRegistry meters) {
        this.perTenant = settings.events().maxPerTenant();
        this.perInstance = settings.events().maxPerInstance();
        Gauge.builder("settle.events.open", this, EventStreamSlots::open)
                .description("event streams open on this ingest instance")
                .register(meters);
    }

    /** One open stream's place; {@link #close} gives it back (once, however often it is called). */
    public final class Slot implements AutoCloseable {
        private final String tenant;
        private boolean released;

        private Slot(String tenant) {
            this.tenant = tenant;
        }

        @Override
        public void close() {
            synchronized (EventStreamSlots.this) {
                if (released) {
                    return;
                }
                released = true;
                open--;
                byTenant.computeIfPresent(tenant, (t, n) -> n == 1 ? null : n - 1);
            }
        }
    }

    /** @throws ApiProblem 429 {@code too-many-streams} when the tenant or this instance holds its maximum */
    public synchronized Slot acquire(String tenant) {
        int tenantOpen = byTenant.getOrDefault(tenant, 0);
        if (tenantOpen >= perTenant) {
            throw refused("this API key's tenant has " + tenantOpen + " event streams open on this instance, the most "
                    + "it may; close one (or wait for one to end) and retry");
        }
        if (open >= perInstance) {
            throw refused("this instance serves " + open + " event streams, the most it may; retry shortly");
        }
        open++;
        byTenant.put(tenant, tenantOpen + 1);
        return new Slot(tenant);
    }

    /** Streams open now on this instance. */
    public synchronized int open() {
        return open;
    }

    private static ApiProblem refused(String detail) {
        return new ApiProblem(HttpStatus.TOO_MANY_REQUESTS, "too-many-streams", detail, RETRY_AFTER_SECONDS);
    }
}
