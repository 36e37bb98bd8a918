package dev.settle.quickstart;

import dev.settle.embedded.logging.OneJvmLogging;
import org.springframework.boot.logging.LogFile;
import org.springframework.boot.logging.LoggingInitializationContext;
import org.springframework.boot.logging.LoggingSystem;
import org.springframework.core.env.MapPropertySource;
import org.springframework.core.env.StandardEnvironment;

import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The quickstart's logging: warnings and errors on the console, everything from INFO up in a rolling file under
 * the data directory ({@value #FILE}: 10 MB a file, 7 days, 100 MB in all), each line naming its service
 * ({@link OneJvmLogging}). Configured before the database and the broker start, so that their start is logged
 * the same way; the applications get the same settings. Any {@code LOGGING_*} variable overrides them (e.g.
 * {@code LOGGING_THRESHOLD_CONSOLE=INFO} shows everything on the console too).
 */
final class QuickstartLogging {
    /** The log file, relative to the data directory. */
    static final String FILE = "logs/settle.log";

    private QuickstartLogging() {}

    /** The logging settings of a quickstart on {@code dataDir}, for every application it starts. */
    static Map<String, Object> settings(Path dataDir) {
        Map<String, Object> p = new LinkedHashMap<>();
        p.put("logging.config", OneJvmLogging.CONSOLE_AND_FILE);
        p.put("logging.file.name", dataDir.resolve(FILE).toString());
        p.put("logging.threshold.console", "WARN");
        p.put("logging.logback.rollingpolicy.max-file-size", "10MB");
        p.put("logging.logback.rollingpolicy.max-history", "7");
        p.put("logging.logback.rollingpolicy.total-size-cap", "100MB");
        // Spring's banner, once per application, goes to the file too
        p.put("spring.main.banner-mode", "log");
        return p;
    }

    /** Configures logging for this JVM from {@code settings}, overridden by the environment and system properties. */
    static void start(Map<String, Object> settings) {
        StandardEnvironment environment = new StandardEnvironment();
        environment.getPropertySources().addLast(new MapPropertySource("settle-quickstart-logging", settings));
        LoggingSystem system = LoggingSystem.get(QuickstartLogging.class.getClassLoader());
        system.beforeInitialize();
        system.initialize(
                new LoggingInitializationContext(environment),
                environment.getProperty("logging.config"),
                LogFile.get(environment));
    }

    /** The log file that {@code settings} and the environment choose. */
    static Path file(Map<String, Object> settings) {
        StandardEnvironment environment = new StandardEnvironment();
        environment.getPropertySources().addLast(new MapPropertySource("settle-quickstart-logging", settings));
        return Path.of(environment.getRequiredProperty("logging.file.name"));
    }
}
