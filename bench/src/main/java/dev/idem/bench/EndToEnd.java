package dev.idem.bench;

import dev.idem.api.MessageHandler;
import dev.idem.runtime.Idem;
import dev.idem.runtime.IdemRuntime;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;

/**
 * What the end-to-end adapter benchmarks share: a run of the real runtime over a pre-filled source, timed
 * from the handler's first call to the last message settled, and the median of rounds.
 */
public final class EndToEnd {

    private EndToEnd() {
    }

    /**
     * Starts the runtime {@code builder} describes with a no-op handler on {@code pipeline}, waits until
     * {@code messages} are settled (processed or duplicates), stops it.
     *
     * @return the nanoseconds from the first handler call to the last message settled
     */
    public static long timeIdem(Idem.Builder builder, String pipeline, int messages) throws InterruptedException {
        return timeIdem(builder, pipeline, messages, (message, context) -> {
        });
    }

    /**
     * Starts the runtime {@code builder} describes with {@code handler} on {@code pipeline}, waits until
     * {@code settled} messages are settled as processed or as duplicates, stops it.
     *
     * @return the nanoseconds from the first handler call to the last message settled
     */
    public static long timeIdem(Idem.Builder builder, String pipeline, int settled, MessageHandler handler)
            throws InterruptedException {
        SimpleMeterRegistry meters = new SimpleMeterRegistry();
        AtomicLong first = new AtomicLong();
        IdemRuntime runtime = builder.meterRegistry(meters)
                .handler(pipeline, (message, context) -> {
                    if (first.get() == 0) {
                        first.compareAndSet(0, System.nanoTime());
                    }
                    handler.handle(message, context);
                })
                .start();
        try {
            List<Counter> outcomes = List.of();
            while (total(outcomes) < settled) {
                Thread.sleep(1);
                if (outcomes.size() < 2) {
                    outcomes = meters.find("idem.messages").tag("pipeline", pipeline)
                            .tag("outcome", outcome -> outcome.equals("processed") || outcome.equals("duplicate"))
                            .counters().stream().toList();
                }
            }
            long nanos = System.nanoTime() - first.get();
            if (Boolean.getBoolean("idem.bench.store-times")) {
                printStoreTimes(meters, pipeline, nanos);
            }
            return nanos;
        } finally {
            runtime.stop(Duration.ofSeconds(10));
        }
    }

    /** With {@code -Didem.bench.store-times=true}: the store calls of a run, their count and share of its time. */
    private static void printStoreTimes(SimpleMeterRegistry meters, String pipeline, long nanos) {
        for (Timer timer : meters.find("idem.store.duration").tag("pipeline", pipeline)
                .timers()) {
            if (timer.count() > 0) {
                System.out.printf("  %-10s %,7d calls, mean %7.3f ms, busy %3.0f %% of the run%n",
                        timer.getId().getTag("operation"), timer.count(), timer.mean(TimeUnit.MILLISECONDS),
                        100 * timer.totalTime(TimeUnit.NANOSECONDS) / nanos);
            }
        }
    }

    private static double total(List<Counter> counters) {
        double sum = 0;
        for (Counter c : counters) {
            sum += c.count();
        }
        return sum;
    }

    /** Messages per second over {@code nanos}, counting from the first message's arrival. */
    public static double rate(int messages, long nanos) {
        return (messages - 1) / (nanos / 1e9);
    }

    /** One side of a comparison: a consumer that reads a pre-filled source once. */
    @FunctionalInterface
    public interface Side {
        /**
         * Reads the source once.
         *
         * @param run this run's number, unique in the comparison: for fresh queue, group and pipeline names
         * @return messages per second
         */
        double run(int run) throws Exception;
    }

    /**
     * Runs every side once per round, rotating which goes first from round to round (two sides: A B, B A,
     * A B, ...; three: A B C, B C A, ...), after {@code warmups} rounds that are printed but not kept.
     * Prints every run under {@code label}.
     *
     * @param sides the sides by name, run in the map's iteration order (a {@code LinkedHashMap})
     * @return the rates of the {@code rounds} measured rounds, by side, in the order of {@code sides}
     */
    public static Map<String, List<Double>> alternate(String label, int warmups, int rounds,
            Map<String, Side> sides) throws Exception {
        List<String> names = new ArrayList<>(sides.keySet());
        Map<String, List<Double>> rates = new LinkedHashMap<>();
        names.forEach(name -> rates.put(name, new ArrayList<>()));
        int run = 0;
        for (int round = -warmups; round < rounds; round++) {
            for (int i = 0; i < names.size(); i++) {
                String name = names.get(Math.floorMod(round + i, names.size()));
                double rate = sides.get(name).run(run++);
                System.out.printf("%-8s %-9s %-18s %,10.0f msg/s%n", label,
                        round < 0 ? "warm-up" : "round " + (round + 1), name, rate);
                if (round >= 0) {
                    rates.get(name).add(rate);
                }
            }
        }
        return rates;
    }

    public static double median(List<Double> values) {
        List<Double> sorted = new ArrayList<>(values);
        Collections.sort(sorted);
        int n = sorted.size();
        return n % 2 == 1 ? sorted.get(n / 2) : (sorted.get(n / 2 - 1) + sorted.get(n / 2)) / 2;
    }
}
