package dev.settle.embedded.logging;

import ch.qos.logback.classic.pattern.ClassicConverter;
import ch.qos.logback.classic.spi.ILoggingEvent;

/**
 * Logback's {@code %service}: {@code [name] } for a thread that works for a named service ({@link ServiceName}),
 * else nothing. The event is formatted on the thread that logs it (no asynchronous appender), so the thread's name
 * is the event's.
 */
public final class ServiceNameConverter extends ClassicConverter {
    @Override
    public String convert(ILoggingEvent event) {
        String name = ServiceName.current();
        return name == null ? "" : "[" + name + "] ";
    }
}
