package dev.settle.quickstart;

import dev.settle.agent.AgentWorkerApplication;
import dev.settle.debounce.DebounceWorkerApplication;
import dev.settle.embedded.AppLauncher;
import dev.settle.ingest.IngestApiApplication;
import org.springframework.context.ConfigurableApplicationContext;

import java.util.HashMap;
import java.util.Map;

/**
 * Starts Settle's three applications in this JVM ({@link AppLauncher}: each in its own Spring context exactly as
 * it runs alone), on a given database and broker. Used by the quickstart and by the end-to-end tests (which
 * start several worker instances to race them).
 */
public final class SettleLauncher implements AutoCloseable {
    private final AppLauncher apps;

    /** @param shared properties every application gets (database, broker, settle.* settings) */
    public SettleLauncher(Map<String, Object> shared) {
        this.apps = new AppLauncher(shared);
    }

    /** On a free API port ({@code server.port} 0) the management port is a free one too, unless given. */
    public ConfigurableApplicationContext startIngestApi(Map<String, Object> extra) {
        Map<String, Object> props = new HashMap<>(extra);
        if ("0".equals(String.valueOf(props.get("server.port")))) {
            props.putIfAbsent("management.server.port", "0");
        }
        return apps.start(IngestApiApplication.class, IngestApiApplication.defaultProperties(), props);
    }

    public ConfigurableApplicationContext startDebounceWorker(Map<String, Object> extra) {
        return apps.start(DebounceWorkerApplication.class, DebounceWorkerApplication.defaultProperties(), extra);
    }

    public ConfigurableApplicationContext startAgentWorker(Map<String, Object> extra) {
        return apps.start(AgentWorkerApplication.class, AgentWorkerApplication.defaultProperties(), extra);
    }

    /** The HTTP port an application listens on (ingest: the API; a worker: its actuator). */
    public static int port(ConfigurableApplicationContext application) {
        return AppLauncher.port(application);
    }

    /** The ingest API's management port (actuator: health, Prometheus). */
    public static int managementPort(ConfigurableApplicationContext ingest) {
        return AppLauncher.managementPort(ingest);
    }

    /** Stops one application as a clean shutdown would. */
    public void stop(ConfigurableApplicationContext context) {
        apps.stop(context);
    }

    /** Closes every application, the last started first. */
    @Override
    public void close() {
        apps.close();
    }
}
