package dev.settle.embedded.logging;

/**
 * The Logback configurations (Spring Boot's {@code logging.config}) of services sharing one JVM. Both are Spring
 * Boot's defaults with the service's name in each line ({@code %service}, see {@link ServiceNameConverter}) in place
 * of {@code spring.application.name}, which Logback, configured once per JVM, would take from the first service.
 * Boot's logging settings apply as usual ({@code logging.threshold.console}, {@code logging.level.*},
 * {@code logging.pattern.*}, {@code logging.logback.rollingpolicy.*}).
 */
public final class OneJvmLogging {
    /** INFO and above on the console. */
    public static final String CONSOLE = "classpath:dev/settle/embedded/logging/logback-console.xml";

    /** INFO and above on the console and in a rolling file ({@code logging.file.name}). */
    public static final String CONSOLE_AND_FILE = "classpath:dev/settle/embedded/logging/logback-console-and-file.xml";

    private OneJvmLogging() {}
}
