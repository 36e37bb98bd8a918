package dev.settle.boot;

import org.springframework.beans.factory.annotation.Value;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.support.JdbcTransactionManager;

import javax.sql.DataSource;
import java.time.Duration;

/**
 * The transaction manager of every Settle application: Spring's {@link JdbcTransactionManager} over
 * {@link StartTransactionDataSource}, so a transaction costs {@code START TRANSACTION … COMMIT} (two statements)
 * instead of Connector/J's {@code SET autocommit=0 … COMMIT … SET autocommit=1} (three). Statements outside a
 * transaction, and Liquibase, use the pool as it is. A transaction open longer than
 * {@code settle.db.slow-transaction} (default 500 ms; 0 turns it off) is logged with its statements
 * ({@link SlowTransactions}).
 */
@Configuration(proxyBeanMethods = false)
public class StoreTransactions {
    @Bean
    JdbcTransactionManager transactionManager(
            DataSource dataSource, @Value("${settle.db.slow-transaction:500ms}") Duration slowTransaction) {
        return new JdbcTransactionManager(
                new StartTransactionDataSource(dataSource, new SlowTransactions(slowTransaction)));
    }
}
