package dev.settle.boot;

import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

import java.time.Duration;
import java.util.Locale;
import java.util.function.Consumer;

/**
 * Names the transactions that stay open long. A transaction whose {@code COMMIT} or {@code ROLLBACK} is answered
 * more than the threshold after its {@code START TRANSACTION} was sent is reported in one line: how long it was
 * open, on which thread (a virtual thread waits for a carrier between statements with its row locks held), and each
 * statement it prepared, at the millisecond it was prepared counted from the start ({@code createStatement()} for
 * one sent without parameters, whose text is not seen here), so the line says which
 * transaction it was and between which of its statements the time went (a lock wait shows as a long gap after the
 * statement that waited, an application pause as a gap before the next one). Reported at WARN, logger
 * {@code dev.settle.boot.SlowTransactions}; a zero threshold reports nothing.
 */
public final class SlowTransactions {
    private static final Logger log = LoggerFactory.getLogger(SlowTransactions.class);
    /** Statements listed per transaction; a longer one says how many more it had. */
    static final int MAX_STATEMENTS = 12;
    /** Characters of each statement listed, whitespace collapsed. */
    static final int SQL_CHARS = 72;

    /**
     * The default threshold: far above any transaction on a reply's path (p99 about 10 ms on a loaded 2-core
     * machine, docs/PERFORMANCE.md), so a report means something held its rows.
     */
    public static final Duration DEFAULT_THRESHOLD = Duration.ofMillis(500);

    private final long thresholdNanos;
    private final Consumer<String> report;

    public SlowTransactions(Duration threshold) {
        this(threshold, log::warn);
    }

    SlowTransactions(Duration threshold, Consumer<String> report) {
        this.thresholdNanos = threshold.toNanos();
        this.report = report;
    }

    /** Called once {@code START TRANSACTION} was sent; null when nothing is reported. */
    Watch begin() {
        return thresholdNanos <= 0 ? null : new Watch(System.nanoTime());
    }

    /** One open transaction: when it began and what it prepared, in order. */
    final class Watch {
        private final long start;
        private final String[] sql = new String[MAX_STATEMENTS];
        private final long[] at = new long[MAX_STATEMENTS];
        private int statements;

        private Watch(long start) {
            this.start = start;
        }

        void prepared(String sqlText) {
            if (statements < MAX_STATEMENTS) {
                sql[statements] = sqlText;
                at[statements] = System.nanoTime();
            }
            statements++;
        }

        /** Called once {@code verb} (COMMIT or ROLLBACK) was answered or failed. */
        void ended(String verb) {
            long end = System.nanoTime();
            if (end - start >= thresholdNanos) {
                report.accept(line(verb, end));
            }
        }

        private String line(String verb, long end) {
            Thread thread = Thread.currentThread();
            StringBuilder line = new StringBuilder("transaction open ")
                    .append(millis(end - start))
                    .append(" ms until its ")
                    .append(verb)
                    .append(" on ")
                    .append(thread.isVirtual() ? "virtual thread " : "thread ")
                    .append(thread.getName().isEmpty() ? "#" + thread.threadId() : thread.getName())
                    .append(": +0.0 START TRANSACTION");
            for (int i = 0; i < Math.min(statements, MAX_STATEMENTS); i++) {
                line.append(" | +").append(millis(at[i] - start)).append(' ').append(shape(sql[i]));
            }
            if (statements > MAX_STATEMENTS) {
                line.append(" | … ").append(statements - MAX_STATEMENTS).append(" more");
            }
            return line.append(" | +")
                    .append(millis(end - start))
                    .append(' ')
                    .append(verb)
                    .toString();
        }
    }

    static String shape(String sql) {
        String flat = sql.strip().replaceAll("\\s+", " ");
        return flat.length() <= SQL_CHARS ? flat : flat.substring(0, SQL_CHARS) + "…";
    }

    private static String millis(long nanos) {
        return String.format(Locale.ROOT, "%.1f", nanos / 1e6);
    }
}
