package dev.settle.e2e;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** The {@code java} a shell finds on the PATH, as the README's command runs it. */
final class PathJava {
    /** {@code java -version}'s first line: {@code openjdk version "17.0.15" 2025-04-15}, {@code "1.8.0_402"}. */
    private static final Pattern VERSION = Pattern.compile("version \"(?:1\\.)?(\\d+)");

    private PathJava() {}

    /** Its feature release (17, 21, 25…). */
    static int feature() throws IOException, InterruptedException {
        Process p =
                new ProcessBuilder("java", "-version").redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new IllegalStateException("java -version did not end");
        }
        Matcher m = VERSION.matcher(out);
        if (!m.find()) {
            throw new IllegalStateException("no version in: " + out);
        }
        return Integer.parseInt(m.group(1));
    }
}
