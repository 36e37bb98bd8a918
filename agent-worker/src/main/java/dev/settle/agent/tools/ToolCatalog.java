package dev.settle.agent.tools;

import dev.langchain4j.agent.tool.Tool;
import dev.langchain4j.agent.tool.ToolSpecification;
import dev.langchain4j.agent.tool.ToolSpecifications;
import dev.langchain4j.service.tool.DefaultToolExecutor;
import org.springframework.aop.support.AopUtils;
import org.springframework.stereotype.Component;

import java.lang.reflect.Method;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/** Every {@code @Tool} method of every {@link AgentTools} bean, with its specification and whether it has side effects. */
@Component
public class ToolCatalog {
    /** One tool the model may call. */
    public record Entry(ToolSpecification specification, DefaultToolExecutor executor, boolean sideEffect) {
        public String name() {
            return specification.name();
        }
    }

    private final Map<String, Entry> tools = new LinkedHashMap<>();

    public ToolCatalog(List<AgentTools> beans) {
        for (AgentTools bean : beans) {
            for (Method method : AopUtils.getTargetClass(bean).getMethods()) {
                if (!method.isAnnotationPresent(Tool.class)) {
                    continue;
                }
                ToolSpecification spec = ToolSpecifications.toolSpecificationFrom(method);
                DefaultToolExecutor executor = DefaultToolExecutor.builder()
                        .object(bean)
                        .originalMethod(method)
                        .methodToInvoke(method)
                        .wrapToolArgumentsExceptions(true)
                        .propagateToolExecutionExceptions(true)
                        .build();
                if (tools.put(spec.name(), new Entry(spec, executor, method.isAnnotationPresent(SideEffect.class)))
                        != null) {
                    throw new IllegalStateException("two tools named " + spec.name());
                }
            }
        }
    }

    public List<ToolSpecification> specifications() {
        return tools.values().stream().map(Entry::specification).toList();
    }

    /** @return the tool, or null when the model asked for one that does not exist */
    public Entry get(String name) {
        return tools.get(name);
    }
}
