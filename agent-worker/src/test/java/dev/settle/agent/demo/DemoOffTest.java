package dev.settle.agent.demo;

import dev.settle.agent.TestAgent;
import dev.settle.agent.model.FallbackModel;
import dev.settle.agent.tools.AgentTools;
import dev.settle.agent.tools.ToolCatalog;
import dev.settle.agent.turn.PromptBuilder;
import org.junit.jupiter.api.Test;

import java.util.Map;
import java.util.Set;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * The demo is a removable room: with {@code settle.demo.enabled=false} the agent offers no tool, its system prompt
 * says nothing of bookkeeping, and without {@code settle.llm.url} it refuses to start, naming both settings.
 */
class DemoOffTest {

    @Test
    void without_the_demo_no_tool_is_offered_and_the_prompt_is_neutral() {
        try (TestAgent agent = new TestAgent(
                "demo-off", Map.of("settle.demo.enabled", "false", "settle.llm.url", "http://127.0.0.1:9/v1"))) {
            assertEquals(0, agent.bean(ToolCatalog.class).specifications().size());
            assertTrue(agent.context.getBeansOfType(AgentTools.class).isEmpty());
            assertTrue(agent.context.getBeansOfType(FallbackModel.class).isEmpty());
            String prompt = agent.bean(PromptBuilder.class).systemPrompt();
            assertEquals(PromptBuilder.NEUTRAL, prompt);
            assertFalse(prompt.toLowerCase().contains("bookkeeping"), prompt);
            assertFalse(prompt.contains("create_transaction"), prompt);
        }
    }

    @Test
    void with_the_demo_the_bookkeeping_tools_and_prompt_are_there() {
        try (TestAgent agent = new TestAgent("demo-on", Map.of())) {
            assertEquals(
                    Set.of("list_categories", "create_transaction"),
                    Set.copyOf(agent.bean(ToolCatalog.class).specifications().stream()
                            .map(s -> s.name())
                            .toList()));
            assertEquals(
                    DemoConfiguration.SYSTEM_PROMPT,
                    agent.bean(PromptBuilder.class).systemPrompt());
        }
    }

    @Test
    void without_the_demo_and_without_a_model_url_the_worker_does_not_start() {
        RuntimeException e = assertThrows(
                RuntimeException.class,
                () -> new TestAgent("demo-off-nourl", Map.of("settle.demo.enabled", "false")).close());
        Throwable root = e;
        while (root.getCause() != null) {
            root = root.getCause();
        }
        assertTrue(
                root.getMessage().contains("settle.llm.url")
                        && root.getMessage().contains("settle.demo.enabled"),
                root.toString());
    }
}
