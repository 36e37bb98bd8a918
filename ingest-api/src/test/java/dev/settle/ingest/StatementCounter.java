package dev.settle.ingest;

import com.mysql.cj.Query;
import com.mysql.cj.protocol.Resultset;
import com.mysql.cj.protocol.ServerSession;
import dev.settle.testsupport.WatchingInterceptor;

import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.Supplier;

/**
 * Counts every statement an application sends through Connector/J, by its SQL text (the text as written, before the
 * parameters are filled in), and the rows their results brought back. Installed by {@link #PROPERTY}; the counts are
 * per JVM, so a test reads deltas.
 */
public final class StatementCounter extends WatchingInterceptor {
    private static final Map<String, LongAdder> BY_SQL = new ConcurrentHashMap<>();
    private static final Map<String, LongAdder> ROWS_BY_SQL = new ConcurrentHashMap<>();

    /** A snapshot of the counts so far, by SQL text with its whitespace collapsed. */
    public static Map<String, Long> snapshot() {
        return shortened(BY_SQL);
    }

    /** The result rows read so far, by SQL text as in {@link #snapshot} (statements without rows left out). */
    public static Map<String, Long> rowsSnapshot() {
        return shortened(ROWS_BY_SQL);
    }

    private static Map<String, Long> shortened(Map<String, LongAdder> counts) {
        Map<String, Long> out = new TreeMap<>();
        counts.forEach((sql, n) -> out.merge(shorten(sql), n.sum(), Long::sum));
        return out;
    }

    /** Statements counted between two snapshots, by SQL text (those with none left out). */
    public static Map<String, Long> delta(Map<String, Long> before, Map<String, Long> after) {
        Map<String, Long> out = new TreeMap<>();
        after.forEach((sql, n) -> {
            long d = n - before.getOrDefault(sql, 0L);
            if (d != 0) {
                out.put(sql, d);
            }
        });
        return out;
    }

    public static long total(Map<String, Long> counts) {
        return counts.values().stream().mapToLong(Long::longValue).sum();
    }

    /** The executions of the statements whose text starts with {@code prefix}. */
    public static long total(Map<String, Long> counts, String prefix) {
        return counts.entrySet().stream()
                .filter(e -> e.getKey().startsWith(prefix))
                .mapToLong(Map.Entry::getValue)
                .sum();
    }

    @Override
    public <T extends Resultset> T preProcess(Supplier<String> sql, Query query) {
        BY_SQL.computeIfAbsent(text(sql, query), k -> new LongAdder()).increment();
        return null;
    }

    private static String text(Supplier<String> sql, Query query) {
        String text = sqlText(sql, query);
        return text == null ? "?" : text;
    }

    private static String shorten(String sql) {
        // the text with its values, when the driver hands over no other: values become ?
        String key = sql.strip()
                .replaceAll("'(?:[^'\\\\]|\\\\.)*'", "?")
                .replaceAll("\\b\\d+\\b", "?")
                .replaceAll("\\s+", " ");
        return key.length() > 100 ? key.substring(0, 100) + "…" : key;
    }

    @Override
    public <T extends Resultset> T postProcess(
            Supplier<String> sql, Query query, T originalResultSet, ServerSession serverSession) {
        // a result read whole knows its size; a streamed one (size unknown) is not counted
        if (originalResultSet != null
                && originalResultSet.getRows() != null
                && originalResultSet.getRows().size() > 0) {
            ROWS_BY_SQL
                    .computeIfAbsent(text(sql, query), k -> new LongAdder())
                    .add(originalResultSet.getRows().size());
        }
        return null;
    }
}
