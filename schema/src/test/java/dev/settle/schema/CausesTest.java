package dev.settle.schema;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.sql.SQLException;

import static org.assertj.core.api.Assertions.assertThat;

class CausesTest {
    /** A cause that names itself, as some libraries build them: the walk must end, not loop. */
    static final class SelfCaused extends RuntimeException {
        @Override
        public synchronized Throwable getCause() {
            return this;
        }
    }

    @Test
    void findsTheFirstMatchingCauseAtAnyDepth() {
        SQLException sql = new SQLException("lock wait", "HY000", 1205);
        RuntimeException wrapped = new IllegalStateException(new RuntimeException("spring", sql));

        assertThat((Throwable) Causes.first(wrapped, SQLException.class)).isSameAs(sql);
        assertThat(Causes.first(wrapped, RuntimeException.class)).isSameAs(wrapped);
        assertThat(Causes.first(wrapped, IOException.class)).isNull();
        assertThat(SqlErrors.has(wrapped, 1205)).isTrue();
        assertThat(SqlErrors.has(wrapped, 1213)).isFalse();
        assertThat(Causes.root(wrapped)).isSameAs(sql);
    }

    @Test
    void aSelfNamedCauseEndsTheWalk() {
        SelfCaused self = new SelfCaused();
        RuntimeException outer = new RuntimeException(self);

        assertThat(Causes.first(outer, IOException.class)).isNull();
        assertThat(Causes.first(outer, SelfCaused.class)).isSameAs(self);
        assertThat(Causes.root(outer)).isSameAs(self);
        assertThat(Causes.root(self)).isSameAs(self);
    }
}
