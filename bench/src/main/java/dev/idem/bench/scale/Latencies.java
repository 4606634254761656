package dev.idem.bench.scale;

import java.util.Arrays;
import java.util.List;

/**
 * Call durations in nanoseconds, one growable array per thread (no locking while recording), merged and sorted
 * for percentiles afterwards.
 */
final class Latencies {

    private long[] nanos = new long[1 << 14];
    private int size;

    void add(long value) {
        if (size == nanos.length) {
            nanos = Arrays.copyOf(nanos, size * 2);
        }
        nanos[size++] = value;
    }

    int size() {
        return size;
    }

    /** The durations of all {@code parts}, sorted. */
    static Sorted merge(List<Latencies> parts) {
        int total = 0;
        for (Latencies part : parts) {
            total += part.size;
        }
        long[] all = new long[total];
        int at = 0;
        for (Latencies part : parts) {
            System.arraycopy(part.nanos, 0, all, at, part.size);
            at += part.size;
        }
        Arrays.sort(all);
        return new Sorted(all);
    }

    /** Sorted durations. */
    record Sorted(long[] nanos) {

        int count() {
            return nanos.length;
        }

        /** The {@code p}-quantile (0 &lt; p &le; 1) by the nearest-rank method, in milliseconds; NaN when empty. */
        double millis(double p) {
            if (nanos.length == 0) {
                return Double.NaN;
            }
            int rank = (int) Math.ceil(p * nanos.length);
            return nanos[Math.max(0, Math.min(nanos.length, rank) - 1)] / 1e6;
        }
    }
}
