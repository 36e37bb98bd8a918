package dev.settle.boot;

import org.springframework.core.InfrastructureProxy;
import org.springframework.jdbc.datasource.DelegatingDataSource;

import javax.sql.DataSource;
import java.lang.reflect.InvocationHandler;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.sql.Connection;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.Set;

/**
 * A view of a pool whose connections frame a transaction with {@code START TRANSACTION} and {@code COMMIT} (or
 * {@code ROLLBACK}) while the session itself stays in autocommit mode.
 *
 * <p>The rule: {@code setAutoCommit(false)} on a connection in autocommit mode sends nothing; the first statement
 * created after it (or after a commit or rollback) is preceded by {@code START TRANSACTION}; {@code commit()} and
 * {@code rollback()} send {@code COMMIT} and {@code ROLLBACK} when a transaction was started; {@code
 * setAutoCommit(true)} commits an open one (as JDBC says) and {@code close()} rolls one back, so a connection goes
 * back to the pool in autocommit mode with no transaction open. On MySQL and MariaDB a transaction begun by
 * {@code START TRANSACTION} has the same isolation, snapshot and locks as one begun by {@code SET autocommit=0}; an
 * implicit commit (DDL) ends it, after which statements commit on their own — which is why Liquibase, which runs DDL,
 * is not given this view. A connection that is not in autocommit mode when it is taken passes everything through.
 *
 * <p>The view is an {@link InfrastructureProxy} of the pool: Spring binds a transaction under the pool itself, so a
 * {@code JdbcTemplate} on the pool joins a transaction a manager on this view began.
 */
public final class StartTransactionDataSource extends DelegatingDataSource implements InfrastructureProxy {
    private static final Set<String> CREATES_STATEMENT =
            Set.of("createStatement", "prepareStatement", "prepareCall", "setSavepoint");

    private final SlowTransactions slow;

    public StartTransactionDataSource(DataSource pool) {
        this(pool, new SlowTransactions(SlowTransactions.DEFAULT_THRESHOLD));
    }

    /** @param slow reports the transactions that stay open long */
    public StartTransactionDataSource(DataSource pool, SlowTransactions slow) {
        super(pool);
        this.slow = slow;
    }

    @Override
    public Connection getConnection() throws SQLException {
        return framed(obtainTargetDataSource().getConnection());
    }

    @Override
    public Connection getConnection(String username, String password) throws SQLException {
        return framed(obtainTargetDataSource().getConnection(username, password));
    }

    @Override
    public Object getWrappedObject() {
        return obtainTargetDataSource();
    }

    private Connection framed(Connection connection) {
        return (Connection) Proxy.newProxyInstance(
                StartTransactionDataSource.class.getClassLoader(),
                new Class<?>[] {Connection.class},
                new Framing(connection, slow));
    }

    private enum State {
        /** The session's own autocommit mode: every call passes through. */
        AUTOCOMMIT,
        /** In a transaction that no statement has begun yet. */
        IDLE,
        /** {@code START TRANSACTION} was sent. */
        OPEN
    }

    private static final class Framing implements InvocationHandler {
        private final Connection target;
        private final SlowTransactions slow;
        private State state = State.AUTOCOMMIT;
        /** The open transaction's watch, while one is open and reported. */
        private SlowTransactions.Watch watch;

        Framing(Connection target, SlowTransactions slow) {
            this.target = target;
            this.slow = slow;
        }

        @Override
        public Object invoke(Object proxy, Method method, Object[] args) throws Throwable {
            String name = method.getName();
            switch (name) {
                case "equals" -> {
                    return proxy == args[0];
                }
                case "hashCode" -> {
                    return System.identityHashCode(proxy);
                }
                case "toString" -> {
                    return "StartTransaction[" + target + ", " + state + "]";
                }
                case "getAutoCommit" -> {
                    return state == State.AUTOCOMMIT ? target.getAutoCommit() : Boolean.FALSE;
                }
                case "setAutoCommit" -> {
                    setAutoCommit((Boolean) args[0]);
                    return null;
                }
                case "commit" -> {
                    if (state == State.AUTOCOMMIT) {
                        target.commit();
                    } else {
                        end("COMMIT");
                    }
                    return null;
                }
                case "rollback" -> {
                    if (state == State.AUTOCOMMIT || args != null) {
                        return call(method, args); // autocommit mode, or to a savepoint
                    }
                    end("ROLLBACK");
                    return null;
                }
                case "close" -> {
                    try {
                        if (state == State.OPEN && !target.isClosed()) {
                            sendEnd("ROLLBACK");
                        }
                    } finally {
                        watch = null;
                        state = State.AUTOCOMMIT;
                        target.close();
                    }
                    return null;
                }
                default -> {
                    if (state == State.IDLE && CREATES_STATEMENT.contains(name)) {
                        send("START TRANSACTION");
                        state = State.OPEN;
                        watch = slow.begin();
                    }
                    if (watch != null && CREATES_STATEMENT.contains(name)) {
                        watch.prepared(args != null && args[0] instanceof String sql ? sql : name + "()");
                    }
                    return call(method, args);
                }
            }
        }

        private void setAutoCommit(boolean on) throws SQLException {
            if (on) {
                if (state == State.OPEN) {
                    sendEnd("COMMIT");
                }
                if (state != State.AUTOCOMMIT) {
                    state = State.AUTOCOMMIT;
                    return;
                }
                target.setAutoCommit(true);
            } else if (state == State.AUTOCOMMIT && target.getAutoCommit()) {
                state = State.IDLE;
            } else if (state == State.AUTOCOMMIT) {
                target.setAutoCommit(false);
            }
        }

        /** Ends the open transaction, if a statement began one; the next statement begins the next. */
        private void end(String verb) throws SQLException {
            if (state == State.OPEN) {
                sendEnd(verb); // when it fails the state stays OPEN: a rollback or close still sends ROLLBACK
                state = State.IDLE;
            }
        }

        /** Sends the open transaction's COMMIT or ROLLBACK and reports the transaction if it was open long. */
        private void sendEnd(String verb) throws SQLException {
            try {
                send(verb);
            } finally {
                if (watch != null) {
                    SlowTransactions.Watch ended = watch;
                    watch = null;
                    ended.ended(verb);
                }
            }
        }

        private void send(String sql) throws SQLException {
            try (Statement statement = target.createStatement()) {
                statement.execute(sql);
            }
        }

        private Object call(Method method, Object[] args) throws Throwable {
            try {
                return method.invoke(target, args);
            } catch (InvocationTargetException e) {
                throw e.getCause();
            }
        }
    }
}
