package dev.settle.testsupport;

import com.mysql.cj.MysqlConnection;
import com.mysql.cj.Query;
import com.mysql.cj.interceptors.QueryInterceptor;
import com.mysql.cj.log.Log;
import com.mysql.cj.protocol.Resultset;
import com.mysql.cj.protocol.ServerSession;

import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.function.Supplier;

/**
 * Records every statement the client sends to the server, commits and session settings included, for tests and
 * the bench that count round trips. Installed per connection pool through the JDBC URL: {@link #url(String,
 * String)} adds {@code queryInterceptors=} and the name of the application the statements are booked to.
 *
 * <p>A statement is what one round trip carries: a batch rewritten into one multi-row statement is one. A
 * <em>transaction</em> is a COMMIT, or a write sent with autocommit on.
 */
public final class SqlTrace extends WatchingInterceptor {
    /** The URL property naming the application a pool's statements are booked to. */
    public static final String APP_PROPERTY = "settleSqlApp";

    /**
     * One statement.
     *
     * @param sql the statement's text as written (parameters as {@code ?})
     * @param autocommit whether the statement committed on its own (autocommit mode, no transaction open after it)
     * @param rows rows returned by a query, or rows affected by a write
     * @param virtualThread whether a virtual thread sent it
     * @param threadId the sending thread's id (virtual threads have no name)
     * @param atNanos when its answer came back ({@link System#nanoTime()})
     */
    public record Statement(
            String app,
            String thread,
            long atNanos,
            String sql,
            boolean autocommit,
            long rows,
            boolean virtualThread,
            long threadId) {
        public boolean isCommit() {
            return sql.equalsIgnoreCase("commit");
        }

        /** A write with autocommit on (its own transaction). */
        public boolean isAutocommitWrite() {
            String verb = verb();
            return autocommit
                    && (verb.equals("INSERT")
                            || verb.equals("UPDATE")
                            || verb.equals("DELETE")
                            || verb.equals("REPLACE"));
        }

        /** Sent inside a transaction: START TRANSACTION, what follows it, its COMMIT. */
        public boolean inTransaction() {
            return !autocommit || isCommit();
        }

        /** COMMIT, or a write that committed on its own. */
        public boolean endsTransaction() {
            return isCommit() || isAutocommitWrite();
        }

        public String verb() {
            String s = sql.stripLeading();
            int end = 0;
            while (end < s.length() && Character.isLetter(s.charAt(end))) {
                end++;
            }
            return s.substring(0, end).toUpperCase(Locale.ROOT);
        }

        /**
         * A poll of a loop that runs whether or not there is work ({@link #LOOP_THREADS}) that found nothing (a
         * SELECT of no rows), only looked ahead (the timer firer's and the orphan scanner's sleep length) or read the
         * new messages (the interrupt watcher's tail, read every poll while turns are in flight), or a lease renewal
         * round (one per heartbeat period for all the worker's leases, whether a reply's turn happens to be among them
         * or not): it costs per second, not per reply.
         */
        public boolean idlePoll() {
            boolean loop = LOOP_THREADS.stream().anyMatch(thread::startsWith);
            return loop
                    && (thread.startsWith("lease-heartbeat")
                            || shape().contains("TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), MIN(")
                            || (thread.startsWith("interrupt-watcher") && shape().contains("FROM chat_message"))
                            || (verb().equals("SELECT") && rows == 0));
        }

        /** The statement on one line, whitespace collapsed, for reports. */
        public String shape() {
            return sql.replaceAll("\\s+", " ").strip();
        }
    }

    /** The threads of Settle's loops that run whether or not there is work (see {@link Statement#idlePoll()}). */
    public static final java.util.Set<String> LOOP_THREADS = java.util.Set.of(
            "webhook-dispatcher",
            "debounce-timer-firer",
            "stranded-session-sweeper",
            "orphaned-lease-scanner",
            "tool-reaper",
            "interrupt-watcher",
            "lease-heartbeat");

    private static final ConcurrentLinkedQueue<Statement> LOG = new ConcurrentLinkedQueue<>();
    private static volatile boolean recording;

    /** {@code jdbcUrl} with this interceptor installed, booking its statements to {@code app}. */
    public static String url(String jdbcUrl, String app) {
        return jdbcUrl + (jdbcUrl.contains("?") ? "&" : "?") + "queryInterceptors=" + SqlTrace.class.getName() + "&"
                + APP_PROPERTY + "=" + app;
    }

    /** Forgets what was recorded and records from now on. */
    public static void start() {
        LOG.clear();
        recording = true;
    }

    /** Stops recording and returns what was recorded since {@link #start()}, in the order it was sent. */
    public static List<Statement> stop() {
        recording = false;
        List<Statement> all = new ArrayList<>(LOG);
        LOG.clear();
        return all;
    }

    /** What was recorded so far, recording on. */
    public static List<Statement> snapshot() {
        return new ArrayList<>(LOG);
    }

    private String app = "?";

    @Override
    public QueryInterceptor init(MysqlConnection conn, Properties props, Log log) {
        app = props.getProperty(APP_PROPERTY, "?");
        return this;
    }

    @Override
    public <T extends Resultset> T postProcess(
            Supplier<String> sql, Query interceptedQuery, T originalResultSet, ServerSession serverSession) {
        if (!recording) {
            return null;
        }
        String text = sqlText(sql, interceptedQuery);
        long rows = -1;
        if (originalResultSet != null) {
            rows = originalResultSet.hasRows() && originalResultSet.getRows() != null
                    ? originalResultSet.getRows().size()
                    : originalResultSet.getUpdateCount();
        }
        // a write in autocommit mode is its own transaction unless START TRANSACTION began one
        boolean autocommit =
                serverSession == null || (serverSession.isAutocommit() && !serverSession.inTransactionOnServer());
        Thread sender = Thread.currentThread();
        LOG.add(new Statement(
                app,
                sender.getName(),
                System.nanoTime(),
                text == null ? "" : text,
                autocommit,
                rows,
                sender.isVirtual(),
                sender.threadId()));
        return null;
    }
}
