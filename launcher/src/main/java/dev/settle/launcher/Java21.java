package dev.settle.launcher;

import java.io.IOException;
import java.lang.reflect.InvocationTargetException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarFile;
import java.util.jar.Manifest;

/**
 * The entry point of Settle's executable jars (the quickstart's, the bench's), compiled for Java 17 so that
 * {@code java -jar} starts on any JDK from 17 on (Spring Boot 4's own floor, and the {@code java} of machines that carry
 * a newer JDK beside it).
 *
 * <p>The rule: on Java 21 or later it runs the jar's main class (its manifest's {@value #MAIN_ATTRIBUTE}) in this JVM.
 * On an older one it runs the same command line (JVM options, {@code -jar}, the jar, the arguments; same directory and
 * environment) with the newest JDK 21+ it finds — {@code JAVA_HOME}, then the JDKs installed under {@link #JDK_DIRS} —
 * and exits with its status; the newer JVM stops when this one does (a signal here is passed on, and the child watches
 * this process), so neither is left running alone. Without a JDK 21+ it says so and exits with status 1.
 */
public final class Java21 {
    /** The lowest Java feature release Settle runs on. */
    static final int NEEDED = 21;
    /** Where JDKs are installed: Debian and most Linux distributions, macOS. */
    static final List<Path> JDK_DIRS = List.of(Path.of("/usr/lib/jvm"), Path.of("/Library/Java/JavaVirtualMachines"));
    /** Set on the newer JVM: the pid of the JVM that started it, whose exit ends it. */
    static final String PARENT = "settle.launcher.parent";

    /** The manifest attribute naming the class whose {@code main} the jar runs. */
    static final String MAIN_ATTRIBUTE = "Settle-Main-Class";

    private Java21() {}

    public static void main(String[] args) throws Throwable {
        if (Runtime.version().feature() >= NEEDED) {
            exitWithParent();
            runMain(args);
            return;
        }
        Optional<Path> java = find(System.getenv("JAVA_HOME"), JDK_DIRS);
        if (java.isEmpty()) {
            System.err.println("Settle needs Java " + NEEDED + " or later; this is Java " + Runtime.version()
                    + " and no JDK " + NEEDED + "+ was found in JAVA_HOME or under " + JDK_DIRS
                    + ". Install one, or run the jar with its java.");
            System.exit(1);
        }
        System.err.println(
                "Java " + Runtime.version().feature() + " is too old for Settle; running it with " + java.get());
        System.exit(relaunch(java.get()));
    }

    /** Runs this process's command line again with {@code java}; returns its exit status. */
    private static int relaunch(Path java) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(java.toString());
        command.add("-D" + PARENT + "=" + ProcessHandle.current().pid());
        command.addAll(List.of(ProcessHandle.current()
                .info()
                .arguments()
                .orElseThrow(() -> new IllegalStateException("this JVM's command line is not readable"))));
        Process child = new ProcessBuilder(command).inheritIO().start();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            child.destroy();
            try {
                child.waitFor(60, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
        }));
        return child.waitFor();
    }

    /** A JVM started by {@link #relaunch} ends (with its shutdown hooks) when the JVM that started it is gone. */
    private static void exitWithParent() {
        String parent = System.getProperty(PARENT);
        if (parent != null) {
            ProcessHandle.of(Long.parseLong(parent))
                    .ifPresentOrElse(p -> p.onExit().thenRun(() -> System.exit(143)), () -> System.exit(143));
        }
    }

    private static void runMain(String[] args) throws Throwable {
        String jar = System.getProperty("java.class.path");
        String main = mainClass(Path.of(jar))
                .orElseThrow(() -> new IllegalStateException(jar + " names no " + MAIN_ATTRIBUTE + " in its manifest"));
        ClassLoader loader = Thread.currentThread().getContextClassLoader();
        try {
            Class.forName(main, true, loader).getMethod("main", String[].class).invoke(null, (Object) args);
        } catch (InvocationTargetException e) {
            throw e.getCause();
        }
    }

    /** The class a jar runs: its manifest's {@value #MAIN_ATTRIBUTE}. */
    static Optional<String> mainClass(Path jar) throws IOException {
        try (JarFile file = new JarFile(jar.toFile())) {
            Manifest manifest = file.getManifest();
            return Optional.ofNullable(
                    manifest == null ? null : manifest.getMainAttributes().getValue(MAIN_ATTRIBUTE));
        }
    }

    /**
     * The {@code bin/java} of a JDK {@value #NEEDED}+: {@code javaHome} if it is one, else the newest under
     * {@code dirs} (each JDK recognised by its {@code release} file, directly or under {@code Contents/Home}).
     */
    static Optional<Path> find(String javaHome, List<Path> dirs) {
        if (javaHome != null && !javaHome.isBlank() && feature(Path.of(javaHome)) >= NEEDED) {
            return Optional.of(Path.of(javaHome, "bin", "java"));
        }
        Path best = null;
        int bestFeature = 0;
        for (Path dir : dirs) {
            if (!Files.isDirectory(dir)) {
                continue;
            }
            try (DirectoryStream<Path> jdks = Files.newDirectoryStream(dir)) {
                for (Path jdk : jdks) {
                    for (Path home : List.of(jdk, jdk.resolve("Contents").resolve("Home"))) {
                        int f = feature(home);
                        if (f >= NEEDED
                                && f > bestFeature
                                && Files.isExecutable(home.resolve("bin").resolve("java"))) {
                            best = home.resolve("bin").resolve("java");
                            bestFeature = f;
                        }
                    }
                }
            } catch (IOException e) {
                // an unreadable directory holds no JDK for us
            }
        }
        return Optional.ofNullable(best);
    }

    /** The feature release in {@code home/release} ({@code JAVA_VERSION="25.0.3"}; "1.8.0" is 8), or 0. */
    static int feature(Path home) {
        Path release = home.resolve("release");
        if (!Files.isRegularFile(release)) {
            return 0;
        }
        try {
            for (String line : Files.readAllLines(release)) {
                if (line.startsWith("JAVA_VERSION=")) {
                    String v = line.substring("JAVA_VERSION=".length())
                            .replace("\"", "")
                            .trim();
                    String[] parts = v.split("[.+-]");
                    int first = Integer.parseInt(parts[0]);
                    return first == 1 && parts.length > 1 ? Integer.parseInt(parts[1]) : first;
                }
            }
        } catch (IOException | RuntimeException e) {
            return 0;
        }
        return 0;
    }
}
