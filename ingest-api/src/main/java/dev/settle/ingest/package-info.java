/**
 * The ingest API: the application ({@link dev.settle.ingest.IngestApiApplication}) and its settings. Its packages,
 * by job; every package may use {@code http}, none uses another except {@code accept}, which answers with a view of
 * {@code views}:
 * <ul>
 *   <li>{@code http}: who is calling and what it may run, refusals as problem+json, request bodies, paging;</li>
 *   <li>{@code accept}: messages in ("accepted means durable", docs/PROMISES.md), policies, retries;</li>
 *   <li>{@code views}: what a client reads of a session, its event stream included;</li>
 *   <li>{@code tenancy}: the admin API: tenants and their API keys;</li>
 *   <li>{@code deliveries}: the webhook outbox and its replay;</li>
 *   <li>{@code demo}: the demo ledger, left out with {@code settle.demo.enabled=false}.</li>
 * </ul>
 */
package dev.settle.ingest;
