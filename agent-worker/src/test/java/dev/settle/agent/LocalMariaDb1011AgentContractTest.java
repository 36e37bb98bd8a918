package dev.settle.agent;

import dev.settle.testsupport.LocalMariaDb;

import java.util.Map;

/** The agent contract on the MariaDB 10.11 of the service machines, when it answers; skipped with the reason otherwise. */
class LocalMariaDb1011AgentContractTest extends AgentContract {
    @Override
    Map<String, Object> database() {
        return Map.of(
                "spring.datasource.url",
                LocalMariaDb.newDatabaseOrSkip("LocalMariaDb1011AgentContractTest", "settle_agent_"),
                "spring.datasource.username",
                LocalMariaDb.USER,
                "spring.datasource.password",
                LocalMariaDb.PASSWORD);
    }
}
