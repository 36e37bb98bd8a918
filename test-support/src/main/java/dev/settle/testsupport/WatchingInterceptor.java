package dev.settle.testsupport;

import com.mysql.cj.MysqlConnection;
import com.mysql.cj.PreparedQuery;
import com.mysql.cj.Query;
import com.mysql.cj.interceptors.QueryInterceptor;
import com.mysql.cj.log.Log;
import com.mysql.cj.protocol.Resultset;
import com.mysql.cj.protocol.ServerSession;

import java.util.Properties;
import java.util.function.Supplier;

/**
 * A Connector/J query interceptor that watches and changes nothing: top-level statements only, every hook lets the
 * statement and its result through. Test interceptors extend it and override the hooks they watch.
 */
public abstract class WatchingInterceptor implements QueryInterceptor {
    /**
     * The Spring property that installs interceptors on an application's pool: their class names, comma-separated.
     */
    public static final String PROPERTY = "spring.datasource.hikari.data-source-properties.queryInterceptors";

    /**
     * A statement's text as written: a prepared statement's SQL before its parameters are filled in, else the text the
     * driver sends.
     */
    protected static String sqlText(Supplier<String> sql, Query query) {
        return query instanceof PreparedQuery prepared && prepared.getOriginalSql() != null
                ? prepared.getOriginalSql()
                : sql.get();
    }

    @Override
    public QueryInterceptor init(MysqlConnection conn, Properties props, Log log) {
        return this;
    }

    @Override
    public <T extends Resultset> T preProcess(Supplier<String> sql, Query query) {
        return null;
    }

    @Override
    public boolean executeTopLevelOnly() {
        return true;
    }

    @Override
    public void destroy() {}

    @Override
    public <T extends Resultset> T postProcess(
            Supplier<String> sql, Query query, T originalResultSet, ServerSession serverSession) {
        return null;
    }
}
