/**
 * The demo: the ledger the bookkeeping agent writes, readable at {@code GET /v1/ledger/entries}. A removable room:
 * {@code settle.demo.enabled=false} leaves it out of the deployment, and nothing else refers to it.
 */
package dev.settle.ingest.demo;
