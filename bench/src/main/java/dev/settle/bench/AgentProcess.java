package dev.settle.bench;

import dev.settle.agent.AgentWorkerApplication;
import org.springframework.boot.builder.SpringApplicationBuilder;
import org.springframework.context.ConfigurableApplicationContext;

import java.lang.management.ManagementFactory;
import java.lang.management.MemoryPoolMXBean;
import java.lang.management.MemoryType;
import java.util.HashMap;
import java.util.Map;

/**
 * One agent-worker in a JVM of its own (the in-flight figure measures its heap): started by {@link InFlightBench}
 * with {@code key=value} properties as arguments; prints {@code READY} once started, then every 250 ms
 * {@code HEAP <used bytes> <used after the last GC, bytes>}; stops when its standard input closes.
 */
public final class AgentProcess {
    private AgentProcess() {}

    public static void main(String[] args) throws Exception {
        Map<String, Object> props = new HashMap<>(AgentWorkerApplication.defaultProperties());
        props.put("server.port", "0");
        for (String a : args) {
            int eq = a.indexOf('=');
            props.put(a.substring(0, eq), a.substring(eq + 1));
        }
        ConfigurableApplicationContext ctx = new SpringApplicationBuilder(AgentWorkerApplication.class)
                .properties(props)
                .registerShutdownHook(false)
                .logStartupInfo(false)
                .run();
        System.out.println("READY");
        System.out.flush();
        Thread reporter = Thread.ofPlatform().daemon().start(() -> {
            while (true) {
                long used = 0;
                long afterGc = 0;
                for (MemoryPoolMXBean pool : ManagementFactory.getMemoryPoolMXBeans()) {
                    if (pool.getType() == MemoryType.HEAP) {
                        used += pool.getUsage().getUsed();
                        afterGc += pool.getCollectionUsage() == null
                                ? 0
                                : pool.getCollectionUsage().getUsed();
                    }
                }
                System.out.println("HEAP " + used + " " + afterGc);
                System.out.flush();
                try {
                    Thread.sleep(250);
                } catch (InterruptedException e) {
                    return;
                }
            }
        });
        while (System.in.read() >= 0) {
            // wait for the parent to close our input
        }
        reporter.interrupt();
        ctx.close();
        System.exit(0);
    }
}
