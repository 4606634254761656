package dev.idem.testkit;

import java.time.Duration;
import java.util.Objects;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongSupplier;

/**
 * A nanosecond time source that moves only when a test {@linkplain #advance(Duration) advances}
 * it, for testing leases and retention without sleeping. Hand it to a store as
 * {@code new StoreContext(ticker)}; {@link #getAsLong()} reads like {@link System#nanoTime()}.
 *
 * <p>It starts at {@link #DEFAULT_START}, a negative value that a suite's hour of advances carries
 * across zero: {@code System.nanoTime()} has an arbitrary origin and may be negative, so a store
 * that treats 0 or negative readings as special (an "unset" sentinel, comparisons of absolute
 * readings instead of differences) fails under it as it would in production.
 *
 * <p>Thread-safe: reads and advances may happen from any thread; a read never goes backwards.
 */
public final class ManualTicker implements LongSupplier {

    /** Where a ticker made with {@link #ManualTicker()} starts: 30 minutes before zero. */
    public static final long DEFAULT_START = -Duration.ofMinutes(30).toNanos();

    private final AtomicLong nanos;

    /** A ticker reading {@link #DEFAULT_START}. */
    public ManualTicker() {
        this(DEFAULT_START);
    }

    /** A ticker reading {@code startNanos}; any value, as {@code System.nanoTime()} may return any. */
    public ManualTicker(long startNanos) {
        this.nanos = new AtomicLong(startNanos);
    }

    /**
     * Moves the time forward by {@code duration}. Readings wrap around {@link Long#MAX_VALUE} as
     * {@code System.nanoTime()} does.
     *
     * @return this ticker, for chaining
     * @throws IllegalArgumentException if {@code duration} is negative: time never goes backwards
     * @throws ArithmeticException if {@code duration} does not fit in a {@code long} of nanoseconds
     */
    public ManualTicker advance(Duration duration) {
        Objects.requireNonNull(duration, "duration");
        if (duration.isNegative()) {
            throw new IllegalArgumentException("A ticker only moves forward; cannot advance by " + duration);
        }
        nanos.addAndGet(duration.toNanos());
        return this;
    }

    /** The current reading, in nanoseconds from an arbitrary origin. */
    @Override
    public long getAsLong() {
        return nanos.get();
    }

    @Override
    public String toString() {
        return "ManualTicker[" + nanos.get() + "ns]";
    }
}
