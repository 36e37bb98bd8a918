package dev.settle.agent;

import dev.settle.testsupport.ModelDouble;
import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.BeforeEachCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.util.Map;

/**
 * One agent worker talking to one model double for a test class: the double starts with the class, the agent before
 * its first test (one model attempt per call, max-wait 60 s so that only the window fires), both stop after the
 * last; the double's script and records are reset before each test. Register it as a static field with
 * {@code @RegisterExtension}.
 */
public final class AgentWithModel implements BeforeAllCallback, AfterAllCallback, BeforeEachCallback {
    public final ModelDouble model = ModelDouble.start();
    private final String hint;
    private TestAgent agent;

    public AgentWithModel(String hint) {
        this.hint = hint;
    }

    public TestAgent agent() {
        return agent;
    }

    @Override
    public void beforeAll(ExtensionContext context) {
        agent = new TestAgent(
                hint,
                Map.of(
                        "settle.llm.url", model.baseUrl(),
                        "settle.llm.max-attempts", "1",
                        "settle.debounce.maxwait", "60s"));
    }

    @Override
    public void beforeEach(ExtensionContext context) {
        model.reset();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        agent.close();
        model.close();
    }
}
