/**
 * What clients change: a message is accepted only once it is durable ("accepted means durable", docs/PROMISES.md)
 * and then announced; session policies, the retry of a failed turn, the retention of Idempotency-Keys.
 */
package dev.settle.ingest.accept;
