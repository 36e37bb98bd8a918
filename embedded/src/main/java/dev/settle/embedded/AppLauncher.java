package dev.settle.embedded;

import dev.settle.embedded.logging.OneJvmLogging;
import dev.settle.embedded.logging.ServiceName;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.boot.web.server.context.WebServerApplicationContext;
import org.springframework.context.ApplicationContextInitializer;
import org.springframework.context.ConfigurableApplicationContext;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Starts Spring Boot applications in this JVM, each in its own context exactly as it runs alone, and stops them.
 *
 * <ol>
 *   <li>An application's properties are its defaults, overridden by the ones shared by every application this
 *       launcher starts, overridden by the ones given for that start.</li>
 *   <li>{@code server.port}, when given, is passed as an argument, which outranks the environment: several
 *       applications serve HTTP in one JVM, so one {@code SERVER_PORT} cannot apply to all of them.</li>
 *   <li>Each application's log lines carry its {@code spring.application.name} ({@link ServiceName}), in the
 *       format of {@link OneJvmLogging#CONSOLE} unless {@code logging.config} is given: Logback is configured
 *       once per JVM, so a name in its configuration would be the first application's.</li>
 *   <li>No JVM shutdown hook per application: the owner closes them ({@link #close()}: the last started first),
 *       before the database and broker they use.</li>
 * </ol>
 */
public final class AppLauncher implements AutoCloseable {
    private final Map<String, Object> shared;
    private final List<ConfigurableApplicationContext> contexts = new ArrayList<>();

    public AppLauncher() {
        this(Map.of());
    }

    /** @param shared properties every application gets (database, broker, settle.* settings) */
    public AppLauncher(Map<String, ?> shared) {
        this.shared = new HashMap<>(shared);
    }

    /**
     * Starts {@code app}; {@link #close()} stops it.
     *
     * @param initializers run on the context before it refreshes (e.g. to register extra singletons)
     */
    public synchronized ConfigurableApplicationContext start(
            Class<?> app,
            Map<String, ?> defaults,
            Map<String, ?> extra,
            ApplicationContextInitializer<?>... initializers) {
        Map<String, Object> props = new HashMap<>(defaults);
        props.put("logging.config", OneJvmLogging.CONSOLE);
        props.putAll(shared);
        props.putAll(extra);
        ConfigurableApplicationContext context = launch(app, props, initializers);
        contexts.add(context);
        return context;
    }

    /** Starts one application on its own (defaults, then {@code extra}); the caller closes the context. */
    public static ConfigurableApplicationContext run(
            Class<?> app,
            Map<String, ?> defaults,
            Map<String, ?> extra,
            ApplicationContextInitializer<?>... initializers) {
        Map<String, Object> props = new HashMap<>(defaults);
        props.put("logging.config", OneJvmLogging.CONSOLE);
        props.putAll(extra);
        return launch(app, props, initializers);
    }

    private static ConfigurableApplicationContext launch(
            Class<?> app, Map<String, Object> props, ApplicationContextInitializer<?>[] initializers) {
        SpringApplicationBuilder builder = new SpringApplicationBuilder(app)
                .main(app) // logs "Starting <app>", not the class whose main() called this
                .properties(props)
                .initializers(initializers)
                .registerShutdownHook(false);
        Object port = props.get("server.port");
        String[] args = port == null ? new String[0] : new String[] {"--server.port=" + port};
        Object name = props.get("spring.application.name");
        return name == null ? builder.run(args) : ServiceName.call(name.toString(), () -> builder.run(args));
    }

    /** The HTTP port an application listens on. */
    public static int port(ConfigurableApplicationContext application) {
        return ((WebServerApplicationContext) application).getWebServer().getPort();
    }

    /** An application's management port (actuator), when it has one of its own. */
    public static int managementPort(ConfigurableApplicationContext application) {
        return Integer.parseInt(application.getEnvironment().getRequiredProperty("local.management.port"));
    }

    /** Stops one application as a clean shutdown would. */
    public synchronized void stop(ConfigurableApplicationContext context) {
        contexts.remove(context);
        context.close();
    }

    /** Closes every application still running, the last started first. */
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
