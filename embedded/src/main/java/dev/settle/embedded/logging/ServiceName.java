package dev.settle.embedded.logging;

import java.util.function.Supplier;

/**
 * The name of the service a thread works for, when several services share one JVM (the quickstart, the bench, the
 * end-to-end tests). A service is started inside {@link #call}: every thread created from then on by that start,
 * and by the threads it created (web, Kafka, scheduler, pool and virtual threads alike), inherits the name.
 * Threads that no service created (the JVM's common pool) have none. {@link ServiceNameConverter} prints it in each
 * log line.
 */
public final class ServiceName {
    private static final InheritableThreadLocal<String> NAME = new InheritableThreadLocal<>();

    private ServiceName() {}

    /** Runs {@code start} with {@code name} as this thread's service name, then restores the previous one. */
    public static <T> T call(String name, Supplier<T> start) {
        String previous = NAME.get();
        NAME.set(name);
        try {
            return start.get();
        } finally {
            if (previous == null) {
                NAME.remove();
            } else {
                NAME.set(previous);
            }
        }
    }

    /** The current thread's service name; null when it has none. */
    public static String current() {
        return NAME.get();
    }
}
