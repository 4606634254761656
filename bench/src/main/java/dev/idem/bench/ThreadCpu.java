package dev.idem.bench;

import java.lang.management.ManagementFactory;
import java.lang.management.ThreadInfo;
import java.lang.management.ThreadMXBean;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;

/**
 * The CPU time the threads of a run used, by role: a sampler reads every live thread's CPU time every 10 ms and
 * keeps each thread's last reading, so threads that end with the run are counted up to their last 10 ms. For the
 * end-to-end benchmarks' {@code -Didem.bench.cpu=true}: what a message costs in CPU, whatever the machine's other
 * load does to the rate.
 *
 * <p>One sampler per run: {@link #start}, run, {@link #stop}. Not thread-safe beyond that.
 */
public final class ThreadCpu {

    private static final long PERIOD_MILLIS = 10;

    private final ThreadMXBean threads = ManagementFactory.getThreadMXBean();
    /** Thread id to its name and last CPU reading (ns). */
    private final Map<Long, Map.Entry<String, Long>> readings = new HashMap<>();
    private final Function<String, String> roleOf;
    private Thread sampler;
    private volatile boolean stopping;

    /** @param roleOf a thread's role from its name, or {@code null} for a thread not to count */
    public ThreadCpu(Function<String, String> roleOf) {
        this.roleOf = roleOf;
    }

    public void start() {
        if (!threads.isThreadCpuTimeSupported()) {
            throw new IllegalStateException("This JVM does not measure the CPU time of threads");
        }
        threads.setThreadCpuTimeEnabled(true);
        sampler = new Thread(() -> {
            while (!stopping) {
                sample();
                try {
                    TimeUnit.MILLISECONDS.sleep(PERIOD_MILLIS);
                } catch (InterruptedException e) {
                    return;
                }
            }
        }, "idem-bench-thread-cpu");
        sampler.setDaemon(true);
        sampler.start();
    }

    /** Stops sampling; the CPU time each role used, in nanoseconds, by role name. */
    public Map<String, Long> stop() throws InterruptedException {
        sample();
        stopping = true;
        sampler.join();
        Map<String, Long> byRole = new TreeMap<>();
        for (Map.Entry<String, Long> reading : readings.values()) {
            byRole.merge(reading.getKey(), reading.getValue(), Long::sum);
        }
        return byRole;
    }

    private synchronized void sample() {
        long[] ids = threads.getAllThreadIds();
        ThreadInfo[] infos = threads.getThreadInfo(ids, 0);
        for (int i = 0; i < ids.length; i++) {
            if (infos[i] == null) {
                continue;
            }
            String role = roleOf.apply(infos[i].getThreadName());
            long cpu = threads.getThreadCpuTime(ids[i]);
            if (role != null && cpu > 0) {
                readings.put(ids[i], Map.entry(role, cpu));
            }
        }
    }
}
