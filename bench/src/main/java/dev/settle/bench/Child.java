package dev.settle.bench;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.TimeUnit;

/**
 * The bench's side of a {@link ServiceProcess}: starts it on the bench's class path with the given heap and
 * properties, waits for {@code READY}, reads its CPU from {@code /proc/<pid>/stat}, drives its JFR recording, and
 * stops it by closing its standard input. Its log lines at WARN and above are echoed with the service's name.
 */
final class Child implements AutoCloseable {
    final String name;
    final Process process;
    final int port;
    private final BlockingQueue<String> replies = new LinkedBlockingQueue<>();

    Child(String service, String heap, Map<String, Object> props) throws Exception {
        this.name = service;
        List<String> cmd = new ArrayList<>();
        cmd.add(ProcessHandle.current().info().command().orElse("java"));
        cmd.add("-Xmx" + heap);
        cmd.add("-Djava.awt.headless=true");
        cmd.add("-XX:FlightRecorderOptions:stackdepth=256");
        cmd.add("-cp");
        cmd.add(System.getProperty("java.class.path"));
        cmd.add(ServiceProcess.class.getName());
        cmd.add(service);
        props.forEach((k, v) -> cmd.add(k + "=" + v));
        process = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        Thread.ofPlatform().daemon().start(() -> {
            try (BufferedReader r = new BufferedReader(new InputStreamReader(process.getInputStream()))) {
                String line;
                while ((line = r.readLine()) != null) {
                    if (line.startsWith("READY ") || line.equals("JFR DONE")) {
                        replies.add(line);
                    } else if (line.contains("ERROR") || line.contains("Exception") || line.contains("WARN")) {
                        System.out.println("[" + service + "] " + line);
                    }
                }
            } catch (Exception ignored) {
                // the child ended
            }
            replies.add("EXIT");
        });
        String ready = replies.poll(180, TimeUnit.SECONDS);
        if (ready == null || !ready.startsWith("READY ")) {
            process.destroyForcibly();
            throw new IllegalStateException("the " + service + " process did not start");
        }
        port = Integer.parseInt(ready.substring("READY ".length()));
    }

    String base() {
        return "http://127.0.0.1:" + port;
    }

    /** CPU seconds (user + system) the child has used so far. */
    double cpuSeconds() {
        return Infra.cpuSeconds(process.pid());
    }

    void jfrStart() throws Exception {
        send("JFR START");
    }

    Profiler.Profile jfrStop(String recordingName, Path dir) throws Exception {
        Path file = dir.toAbsolutePath().resolve(recordingName + ".jfr");
        send("JFR STOP " + file);
        String done = replies.poll(120, TimeUnit.SECONDS);
        return "JFR DONE".equals(done) ? Profiler.summarize(recordingName, file) : null;
    }

    private void send(String line) throws Exception {
        OutputStream out = process.getOutputStream();
        out.write((line + "\n").getBytes(StandardCharsets.UTF_8));
        out.flush();
    }

    @Override
    public void close() throws Exception {
        process.getOutputStream().close();
        if (!process.waitFor(60, TimeUnit.SECONDS)) {
            process.destroyForcibly();
        }
    }
}
