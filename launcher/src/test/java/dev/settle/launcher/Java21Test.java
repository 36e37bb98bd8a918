package dev.settle.launcher;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import java.util.Optional;
import java.util.jar.Attributes;
import java.util.jar.JarOutputStream;
import java.util.jar.Manifest;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Which JDK an executable jar's entry point relaunches itself with when the {@code java} that started it is older, and
 * which class it runs.
 */
class Java21Test {
    @TempDir
    Path dir;

    @Test
    void the_newest_jdk_21_or_later_under_the_install_directories_is_chosen() throws IOException {
        jdk(dir.resolve("java-17-openjdk-amd64"), "17.0.15");
        Path jdk21 = jdk(dir.resolve("jdk-21"), "21.0.5");
        Path jdk25 = jdk(dir.resolve("temurin-25-jdk-amd64"), "25.0.3");

        assertThat(Java21.find(null, List.of(dir))).contains(java(jdk25));
        assertThat(Java21.find("", List.of(dir.resolve("missing"), dir))).contains(java(jdk25));
        assertThat(jdk21).exists();
    }

    @Test
    void java_home_wins_when_it_is_21_or_later_and_is_passed_over_when_older() throws IOException {
        Path jdk17 = jdk(dir.resolve("jdk-17"), "17.0.15");
        Path jdk21 = jdk(dir.resolve("jdk-21"), "21.0.5");
        Path jdk25 = jdk(dir.resolve("jdk-25"), "25");

        assertThat(Java21.find(jdk21.toString(), List.of(dir))).contains(java(jdk21));
        assertThat(Java21.find(jdk17.toString(), List.of(dir))).contains(java(jdk25));
    }

    @Test
    void a_macos_jdk_is_found_under_contents_home() throws IOException {
        Path home = jdk(dir.resolve("temurin-21.jdk").resolve("Contents").resolve("Home"), "21.0.2");

        assertThat(Java21.find(null, List.of(dir))).contains(java(home));
    }

    @Test
    void nothing_older_than_21_and_nothing_without_an_executable_java_is_chosen() throws IOException {
        jdk(dir.resolve("jdk-8"), "1.8.0_402");
        jdk(dir.resolve("jdk-17"), "17.0.15");
        Path broken = jdk(dir.resolve("jdk-24"), "24.0.1");
        Files.delete(java(broken));
        Files.createDirectories(dir.resolve("not-a-jdk"));

        assertThat(Java21.find(null, List.of(dir))).isEqualTo(Optional.empty());
        assertThat(Java21.feature(dir.resolve("jdk-8"))).isEqualTo(8);
        assertThat(Java21.feature(dir.resolve("not-a-jdk"))).isZero();
    }

    @Test
    void the_class_a_jar_runs_is_named_by_its_manifest() throws IOException {
        Manifest manifest = new Manifest();
        manifest.getMainAttributes().put(Attributes.Name.MANIFEST_VERSION, "1.0");
        manifest.getMainAttributes().putValue(Java21.MAIN_ATTRIBUTE, "dev.settle.quickstart.Quickstart");
        Path named = dir.resolve("named.jar");
        new JarOutputStream(Files.newOutputStream(named), manifest).close();
        Path unnamed = dir.resolve("unnamed.jar");
        new JarOutputStream(Files.newOutputStream(unnamed)).close();

        assertThat(Java21.mainClass(named)).contains("dev.settle.quickstart.Quickstart");
        assertThat(Java21.mainClass(unnamed)).isEmpty();
    }

    /** A JDK's shape as the finder sees it: a {@code release} file and an executable {@code bin/java}. */
    private static Path jdk(Path home, String version) throws IOException {
        Files.createDirectories(home.resolve("bin"));
        Files.writeString(
                home.resolve("release"),
                "IMPLEMENTOR=\"Test\"\nJAVA_RUNTIME_VERSION=\"x\"\nJAVA_VERSION=\"" + version + "\"\n");
        Path java = java(home);
        Files.writeString(java, "#!/bin/sh\n");
        Files.setPosixFilePermissions(java, PosixFilePermissions.fromString("rwxr-xr-x"));
        return home;
    }

    private static Path java(Path home) {
        return home.resolve("bin").resolve("java");
    }
}
