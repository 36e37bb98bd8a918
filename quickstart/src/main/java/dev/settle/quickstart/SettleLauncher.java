package dev.settle.quickstart;

import dev.settle.agent.AgentWorkerApplication;
import dev.settle.debounce.DebounceWorkerApplication;
import dev.settle.ingest.IngestApiApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ConfigurableApplicationContext;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Starts Settle's three applications in this JVM, each in its own Spring context exactly as it runs alone,
 * on a given database and broker. Used by the quickstart and by the end-to-end tests (which start several
 * worker instances to race them).
 */
public final class SettleLauncher implements AutoCloseable {
    private final Map<String, Object> shared;
    private final List<ConfigurableApplicationContext> contexts = new ArrayList<>();

    /** @param shared properties every application gets (database, broker, settle.* settings) */
    public SettleLauncher(Map<String, Object> shared) {
        this.shared = new HashMap<>(shared);
    }

    /** On a free API port ({@code server.port} 0) the management port is a free one too, unless given. */
    public ConfigurableApplicationContext startIngestApi(Map<String, Object> extra) {
        Map<String, Object> props = new HashMap<>(extra);
        if ("0".equals(String.valueOf(props.get("server.port")))) {
            props.putIfAbsent("management.server.port", "0");
        }
        return start(IngestApiApplication.class, IngestApiApplication.defaultProperties(), props);
    }

    public ConfigurableApplicationContext startDebounceWorker(Map<String, Object> extra) {
        return start(DebounceWorkerApplication.class, DebounceWorkerApplication.defaultProperties(), extra);
    }

    public ConfigurableApplicationContext startAgentWorker(Map<String, Object> extra) {
        return start(AgentWorkerApplication.class, AgentWorkerApplication.defaultProperties(), extra);
    }

    /** The HTTP port an application listens on (ingest: the API; a worker: its actuator). */
    public static int port(ConfigurableApplicationContext application) {
        return ((WebServerApplicationContext) application).getWebServer().getPort();
    }

    /** The ingest API's management port (actuator: health, Prometheus). */
    public static int managementPort(ConfigurableApplicationContext ingest) {
        return Integer.parseInt(ingest.getEnvironment().getRequiredProperty("local.management.port"));
    }

    private synchronized ConfigurableApplicationContext start(Class<?> app, Map<String, Object> defaults,
                                                              Map<String, Object> extra) {
        Map<String, Object> props = new HashMap<>(defaults);
        props.putAll(shared);
        props.putAll(extra);
        // Every application in this JVM serves HTTP (ingest its API, the workers their actuator): each one's port
        // is passed as an argument, which outranks the environment, so one SERVER_PORT cannot apply to all three.
        ConfigurableApplicationContext context = new SpringApplicationBuilder(app)
                .properties(props)
                .registerShutdownHook(false)
                .run("--server.port=" + props.get("server.port"));
        contexts.add(context);
        return context;
    }

    /** Stops one application as a clean shutdown would. */
    public synchronized void stop(ConfigurableApplicationContext context) {
        contexts.remove(context);
        context.close();
    }

    /** Closes every application, the last started first. */
    @Override
    public synchronized void close() {
        for (int i = contexts.size() - 1; i >= 0; i--) {
            try {
                contexts.get(i).close();
            } catch (RuntimeException e) {
                System.err.println("error while stopping " + contexts.get(i).getId() + ": " + e);
            }
        }
        contexts.clear();
    }
}
