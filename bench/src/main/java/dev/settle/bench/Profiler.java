package dev.settle.bench;

import jdk.jfr.Configuration;
import jdk.jfr.Recording;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedFrame;
import jdk.jfr.consumer.RecordedStackTrace;
import jdk.jfr.consumer.RecordingFile;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Path;
import java.text.ParseException;
import java.time.Instant;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Predicate;

/**
 * JDK Flight Recorder around one scenario of this JVM ({@link #start}), or a recording another JVM dumped
 * ({@link #summarize}): CPU samples ({@code jdk.ExecutionSample}) counted by the method on top of the stack and by
 * the first frame of Settle's code, so the report names where the time went.
 */
final class Profiler {
    private Profiler() {}

    /** A summary of one recording. */
    record Profile(
            String name,
            Path file,
            long samples,
            Map<String, Long> topFrames,
            Map<String, Long> settleFrames,
            Map<String, Long> byPackage) {}

    static Recording start(String name) {
        try {
            Recording r = new Recording(Configuration.getConfiguration("profile"));
            r.setName(name);
            r.setToDisk(true);
            r.start();
            return r;
        } catch (IOException | ParseException e) {
            throw new IllegalStateException(e);
        }
    }

    static Profile stop(Recording r, Path dir) {
        try {
            r.stop();
            Path file = dir.resolve(r.getName() + ".jfr");
            r.dump(file);
            r.close();
            return summarize(r.getName(), file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    static Profile summarize(String name, Path file) {
        return summarize(name, file, Instant.MIN);
    }

    /** Only the samples taken from {@code since} on (a recording that began with the JVM leaves out its start). */
    static Profile summarize(String name, Path file, Instant since) {
        return summarize(name, file, since, Instant.MAX);
    }

    /** Only the samples taken from {@code since} to {@code until} (one measured window of a longer recording). */
    static Profile summarize(String name, Path file, Instant since, Instant until) {
        Map<String, Long> top = new HashMap<>();
        Map<String, Long> settle = new HashMap<>();
        Map<String, Long> packages = new HashMap<>();
        long samples = 0;
        try {
            for (RecordedEvent e : RecordingFile.readAllEvents(file)) {
                if (!"jdk.ExecutionSample".equals(e.getEventType().getName())
                        || e.getStartTime().isBefore(since)
                        || e.getStartTime().isAfter(until)) {
                    continue;
                }
                RecordedStackTrace st = e.getStackTrace();
                if (st == null || st.getFrames().isEmpty()) {
                    continue;
                }
                samples++;
                List<RecordedFrame> frames = st.getFrames();
                top.merge(method(frames.getFirst()), 1L, Long::sum);
                packages.merge(area(frames), 1L, Long::sum);
                frames.stream().filter(isSettle()).findFirst().ifPresent(f -> settle.merge(method(f), 1L, Long::sum));
            }
        } catch (IOException ex) {
            throw new UncheckedIOException(ex);
        }
        return new Profile(name, file, samples, largest(top, 10), largest(settle, 10), largest(packages, 10));
    }

    private static Predicate<RecordedFrame> isSettle() {
        return f -> f.getMethod() != null
                && f.getMethod().getType().getName().startsWith("dev.settle.")
                && !f.getMethod().getType().getName().startsWith("dev.settle.bench.");
    }

    private static String method(RecordedFrame f) {
        if (f.getMethod() == null) {
            return "?";
        }
        String type = f.getMethod().getType().getName();
        return type.substring(type.lastIndexOf('.') + 1) + "." + f.getMethod().getName() + " (" + pkg(type) + ")";
    }

    /** Which part of the stack the sample belongs to: the first frame outside the JDK names it, else the top frame. */
    private static String area(List<RecordedFrame> frames) {
        for (RecordedFrame f : frames) {
            if (f.getMethod() == null) {
                continue;
            }
            String type = f.getMethod().getType().getName();
            if (!type.startsWith("java.")
                    && !type.startsWith("jdk.")
                    && !type.startsWith("sun.")
                    && !type.startsWith("com.sun.")) {
                return bucket(type);
            }
        }
        return bucket(
                frames.getFirst().getMethod() == null
                        ? "?"
                        : frames.getFirst().getMethod().getType().getName());
    }

    private static String bucket(String type) {
        String[] known = {
            "dev.settle.bench",
            "dev.settle.ingest",
            "dev.settle.agent",
            "dev.settle.debounce",
            "dev.settle.schema",
            "dev.settle.testsupport",
            "com.mysql",
            "com.zaxxer.hikari",
            "org.apache.kafka",
            "org.apache.hc",
            "org.apache.catalina",
            "org.apache.coyote",
            "org.apache.tomcat",
            "org.springframework.kafka",
            "org.springframework.jdbc",
            "org.springframework.web",
            "org.springframework.security",
            "org.springframework",
            "tools.jackson",
            "dev.langchain4j",
            "ch.qos.logback",
            "org.HdrHistogram",
            "java.net.http",
            "java.util.concurrent",
            "jdk.internal.net.http",
            "sun.nio",
            "java.lang",
            "java.util"
        };
        for (String k : known) {
            if (type.startsWith(k)) {
                return k;
            }
        }
        String[] parts = type.split("\\.");
        return parts.length > 2 ? parts[0] + "." + parts[1] : type;
    }

    private static String pkg(String type) {
        int dot = type.lastIndexOf('.');
        return dot < 0 ? "" : type.substring(0, dot);
    }

    private static Map<String, Long> largest(Map<String, Long> counts, int n) {
        Map<String, Long> result = new LinkedHashMap<>();
        counts.entrySet().stream()
                .sorted(Map.Entry.<String, Long>comparingByValue().reversed())
                .limit(n)
                .forEach(e -> result.put(e.getKey(), e.getValue()));
        return result;
    }
}
