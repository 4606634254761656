package dev.idem.bench.soak;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.function.ToLongFunction;

/**
 * The soak's verdict on a steady state: whether the store's size stayed flat over the last half of the samples (its
 * max within {@code flatPercent} of its min), and how the throughput of the samples in which keys expired (and were
 * purged) compares with the samples before the first key could expire. Immutable.
 */
final class SteadyState {

    /** One sample of the soak: messages sent and handler runs in it, lag and store at its end and start. */
    record Minute(int bucket, long sent, long runs, long lag, StoreGauge.Sample store, StoreGauge.Sample before) {
    }

    private final List<Minute> minutes;
    private final Duration sample;
    private final Duration retention;
    private final double flatPercent;

    SteadyState(List<Minute> minutes, Duration sample, Duration retention, double flatPercent) {
        this.minutes = List.copyOf(minutes);
        this.sample = sample;
        this.retention = retention;
        this.flatPercent = flatPercent;
    }

    /** The verdict's lines. */
    List<String> verdict() {
        List<Minute> stored = minutes.stream().filter(m -> m.store() != null).toList();
        List<String> lines = new ArrayList<>();
        if (stored.size() < 4) {
            lines.add("steady state: " + stored.size() + " samples of the store, too few to judge (4 at least)");
            return lines;
        }
        List<Minute> half = stored.subList(stored.size() / 2, stored.size());
        Minute last = last(stored);
        String size = last.store().sideBytes() >= 0 ? "store size (keys table + side tables)" : "store size";
        lines.add(flatness(size, half, m -> m.store().bytes() + Math.max(0, m.store().sideBytes()), true));
        lines.add(flatness("keys in the store", half, m -> m.store().keys(), false));
        if (last.store().dead() >= 0) {
            lines.add(String.format(Locale.ROOT, "dead row versions of the keys table at the last sample: %,d (%,d"
                    + " rows); vacuums of it since it was created: %d", last.store().dead(), last.store().keys(),
                    last.store().vacuums()));
        }
        lines.add(throughput());
        return lines;
    }

    private static Minute last(List<Minute> of) {
        return of.get(of.size() - 1);
    }

    private String flatness(String what, List<Minute> half, ToLongFunction<Minute> value, boolean bytes) {
        long min = Long.MAX_VALUE;
        long max = Long.MIN_VALUE;
        for (Minute m : half) {
            min = Math.min(min, value.applyAsLong(m));
            max = Math.max(max, value.applyAsLong(m));
        }
        Minute first = half.get(0);
        Minute last = half.get(half.size() - 1);
        double perSample = (value.applyAsLong(last) - value.applyAsLong(first))
                / (double) Math.max(1, last.bucket() - first.bucket());
        double spread = min > 0 ? 100.0 * (max - min) / min : Double.POSITIVE_INFINITY;
        boolean flat = spread <= flatPercent;
        return String.format(Locale.ROOT, "%s over samples %d-%d: min %s, max %s (+%.1f %%), %s %s per %s: %s",
                what, first.bucket() + 1, last.bucket() + 1, amount(min, bytes), amount(max, bytes), spread,
                perSample >= 0 ? "growing" : "shrinking", amount(Math.round(Math.abs(perSample)), bytes),
                Soak.human(sample), flat ? "FLAT (max within " + flatPercent + " % of min)"
                        : "NOT FLAT (max more than " + flatPercent + " % above min)");
    }

    private static String amount(long value, boolean bytes) {
        return bytes ? String.format(Locale.ROOT, "%.1f MB", value / 1048576.0) : String.format(Locale.ROOT, "%,d",
                value);
    }

    /** Runs/s of the samples after the first key could expire against those before. */
    private String throughput() {
        long sampleMillis = sample.toMillis();
        List<Minute> before = minutes.stream().filter(m -> (m.bucket() + 1) * sampleMillis <= retention.toMillis())
                .toList();
        List<Minute> purging = minutes.stream().filter(m -> m.bucket() * sampleMillis >= retention.toMillis())
                .toList();
        if (before.isEmpty() || purging.isEmpty()) {
            return "throughput: no samples " + (before.isEmpty() ? "before the first key could expire (retention "
                    + Soak.human(retention) + " < one sample)" : "after the retention passed") + " to compare";
        }
        double seconds = sampleMillis / 1000.0;
        double runsBefore = median(before, Minute::runs) / seconds;
        double runsPurging = median(purging, Minute::runs) / seconds;
        long maxLag = purging.stream().mapToLong(Minute::lag).max().orElse(-1);
        double ratio = runsPurging / runsBefore;
        return String.format(Locale.ROOT, "throughput: median runs/s %,.0f over samples %d-%d (keys expiring, purged)"
                + " vs %,.0f over samples %d-%d (before the first key could expire, retention %s) = %.3f×, a dent"
                + " of %.1f %%; sent/s medians %,.0f / %,.0f; lag at most %,d in the expiring samples, %,d at the"
                + " last", runsPurging, purging.get(0).bucket() + 1, purging.get(purging.size() - 1).bucket() + 1,
                runsBefore, before.get(0).bucket() + 1, before.get(before.size() - 1).bucket() + 1,
                Soak.human(retention), ratio, Math.max(0, 100 * (1 - ratio)), median(purging, Minute::sent) / seconds,
                median(before, Minute::sent) / seconds, maxLag, minutes.get(minutes.size() - 1).lag());
    }

    private static double median(List<Minute> of, ToLongFunction<Minute> value) {
        long[] values = of.stream().mapToLong(value).sorted().toArray();
        int n = values.length;
        return n % 2 == 1 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
    }
}
