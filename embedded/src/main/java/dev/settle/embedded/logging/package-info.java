/**
 * Logging for several services in one JVM: each line names the service it comes from ({@link
 * dev.settle.embedded.logging.ServiceName}); {@link dev.settle.embedded.logging.OneJvmLogging} names the Logback
 * configurations (console only, or console and a rolling file).
 */
package dev.settle.embedded.logging;
