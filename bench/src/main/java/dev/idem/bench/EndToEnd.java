package dev.idem.bench;

import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the end-to-end adapter benchmarks share: a run of the real runtime over a pre-filled source, timed
 * from the handler's first call to the last message processed, and the median of rounds.
 */
public final class EndToEnd {

    private EndToEnd() {
    }

    /**
     * Starts the runtime {@code builder} describes with a no-op handler on {@code pipeline}, waits until
     * {@code messages} are processed, stops it.
     *
     * @return the nanoseconds from the first handler call to the last message processed
     */
    public static long timeIdem(Idem.Builder builder, String pipeline, int messages) throws InterruptedException {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        AtomicLong first = new AtomicLong();
        IdemRuntime runtime = builder.meterRegistry(meters)
                .handler(pipeline, (message, context) -> {
                    if (first.get() == 0) {
                        first.compareAndSet(0, System.nanoTime());
                    }
                })
                .start();
        try {
            Counter processed = null;
            while (processed == null || processed.count() < messages) {
                Thread.sleep(1);
                if (processed == null) {
                    processed = meters.find("idem.messages").tag("outcome", "processed").counter();
                }
            }
            return System.nanoTime() - first.get();
        } finally {
            runtime.stop(Duration.ofSeconds(10));
        }
    }

    /** Messages per second over {@code nanos}, counting from the first message's arrival. */
    public static double rate(int messages, long nanos) {
        return (messages - 1) / (nanos / 1e9);
    }

    public static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}
