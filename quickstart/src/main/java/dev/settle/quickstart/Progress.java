package dev.settle.quickstart;

import java.io.PrintStream;
import java.util.Locale;
import java.util.function.Function;
import java.util.function.Supplier;

/**
 * One console line per component the quickstart starts, printed when it is up: a check mark, what it is, and
 * how long it took ({@code   ✓ database (MariaDB 11.4.5, embedded)        2.1 s}); a cross when it failed.
 */
final class Progress {
    private static final int WIDTH = 52;
    private final PrintStream out;
    private final String doneMark;
    private final String failedMark;

    /** Marks the console cannot show (an ASCII-only locale) are {@code +} and {@code x} instead. */
    Progress(PrintStream out) {
        this.out = out;
        boolean marks = out.charset().newEncoder().canEncode("✓✗");
        this.doneMark = marks ? "  ✓ " : "  + ";
        this.failedMark = marks ? "  ✗ " : "  x ";
    }

    /**
     * Starts something and prints its line.
     *
     * @param what its name while starting (printed if it fails)
     * @param done its line once started (e.g. with a version learned from it)
     */
    <T> T step(String what, Supplier<T> start, Function<T, String> done) {
        long began = System.nanoTime();
        try {
            T started = start.get();
            out.println(line(doneMark, done.apply(started), began));
            return started;
        } catch (RuntimeException e) {
            out.println(line(failedMark, what, began));
            throw e;
        }
    }

    /** A component the quickstart does not start (external), without a time. */
    void external(String what) {
        out.println(doneMark + what);
    }

    private static String line(String mark, String what, long began) {
        double seconds = (System.nanoTime() - began) / 1e9;
        return mark + String.format(Locale.ROOT, "%-" + WIDTH + "s %5.1f s", what, seconds);
    }
}
