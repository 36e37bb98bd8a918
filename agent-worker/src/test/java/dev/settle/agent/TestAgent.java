package dev.settle.agent;

import dev.settle.embedded.AppLauncher;
import dev.settle.testsupport.SharedInfra;
import org.springframework.context.ConfigurableApplicationContext;
import org.springframework.jdbc.core.JdbcTemplate;

import java.util.HashMap;
import java.util.Map;
import java.util.UUID;

/** An agent worker started for real on a fresh database; tests drive its named pieces directly. */
public final class TestAgent implements AutoCloseable {
    public final ConfigurableApplicationContext context;
    public final JdbcTemplate jdbc;

    /** @param beans extra singletons for the context (e.g. test tools), registered before it starts */
    public TestAgent(String hint, Map<String, Object> extra, Object... beans) {
        Map<String, Object> props = new HashMap<>();
        props.put("spring.datasource.url", SharedInfra.newDatabase(hint));
        props.put("spring.kafka.bootstrap-servers", SharedInfra.kafkaBootstrap());
        props.put("server.port", "0"); // the actuator; several workers share this JVM
        props.put("spring.kafka.consumer.group-id", "agent-test-" + UUID.randomUUID());
        // this context must not react to other tests' events: listen to a topic nobody writes
        props.put("spring.kafka.listener.auto-startup", "false");
        props.put("spring.datasource.hikari.maximum-pool-size", "40");
        props.put("settle.agent.orphan-scan", "false");
        props.putAll(extra);
        context =
                AppLauncher.run(AgentWorkerApplication.class, AgentWorkerApplication.defaultProperties(), props, c -> {
                    for (Object bean : beans) {
                        c.getBeanFactory().registerSingleton(bean.getClass().getName(), bean);
                    }
                });
        jdbc = context.getBean(JdbcTemplate.class);
    }

    public <T> T bean(Class<T> type) {
        return context.getBean(type);
    }

    /** A session with {@code version} unanswered user messages, as the ingest API would have left it. */
    public long sessionWithMessages(int version) {
        String external = "agent-" + UUID.randomUUID();
        jdbc.update("""
                INSERT INTO chat_session (external_id, version, oldest_unanswered_at, last_message_at, created_at)
                VALUES (?, ?, UTC_TIMESTAMP(6), UTC_TIMESTAMP(6), UTC_TIMESTAMP(6))""", external, version);
        long id = jdbc.queryForObject("SELECT id FROM chat_session WHERE external_id = ?", Long.class, external);
        for (int v = 1; v <= version; v++) {
            jdbc.update("""
                    INSERT INTO chat_message (message_uid, session_id, role, text, version, created_at)
                    VALUES (?, ?, 'user', ?, ?, UTC_TIMESTAMP(6))""", "msg_" + UUID.randomUUID(), id, "message " + v, v);
        }
        return id;
    }

    /** What ingest does for one more message. */
    public void newMessage(long sessionId) {
        jdbc.update(
                "UPDATE chat_session SET version = version + 1, last_message_at = UTC_TIMESTAMP(6) WHERE id = ?",
                sessionId);
        long v = jdbc.queryForObject("SELECT version FROM chat_session WHERE id = ?", Long.class, sessionId);
        jdbc.update("""
                INSERT INTO chat_message (message_uid, session_id, role, text, version, created_at)
                VALUES (?, ?, 'user', ?, ?, UTC_TIMESTAMP(6))""", "msg_" + UUID.randomUUID(), sessionId, "message " + v, v);
    }

    public int count(String sql, Object... args) {
        return jdbc.queryForObject(sql, Integer.class, args);
    }

    /** Transactions of this agent's database that the server shows waiting for a lock in a statement on {@code table}. */
    public int lockWaitsOn(String table) {
        return count("""
                SELECT COUNT(*) FROM information_schema.INNODB_TRX t
                  JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
                 WHERE p.DB = DATABASE() AND t.trx_state = 'LOCK WAIT' AND t.trx_query LIKE ?""", "%" + table + "%");
    }

    @Override
    public void close() {
        context.close();
    }
}
