/** The webhook outbox for operators: deliveries with their attempts, and the replay of a dead letter. */
package dev.settle.ingest.deliveries;
