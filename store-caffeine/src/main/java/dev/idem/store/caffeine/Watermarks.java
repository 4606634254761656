package dev.idem.store.caffeine;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.StoreKey;
import java.util.Objects;
import java.util.function.LongSupplier;

/**
 * The sequence guard's watermarks of a {@link CaffeineDedupStore}, one per aggregate, in a cache of their own:
 * apart from the completed keys, so that neither the keys' size bound nor their retention ever evicts one (a
 * forgotten watermark lets stale events run again), and each expiring {@link SequenceAdvance#retention()} after
 * its last change on the store's ticker.
 *
 * <p>Unbounded: there is one entry per aggregate seen within the retention, and Caffeine removes expired ones
 * on its own maintenance, which runs on the writing thread as in the store's completed tier. An expired entry
 * reads as absent before maintenance removes it, and a raise of it starts afresh.
 *
 * <p>{@link #raise} is called by the store inside the key's lock of a completion (see
 * {@link CaffeineDedupStore}); it locks only the aggregate's entry and never calls back into the store, so the
 * lock order is always claim map, then watermarks. Thread-safe.
 */
final class Watermarks {

    private static final Expiry<StoreKey, Mark> UNTIL_RETENTION_ENDS = new Expiry<>() {
        @Override
        public long expireAfterCreate(StoreKey aggregate, Mark mark, long currentTime) {
            return Math.max(0L, mark.expiresAt - currentTime);
        }

        @Override
        public long expireAfterUpdate(StoreKey aggregate, Mark mark, long currentTime, long currentDuration) {
            return Math.max(0L, mark.expiresAt - currentTime);
        }

        @Override
        public long expireAfterRead(StoreKey aggregate, Mark mark, long currentTime, long currentDuration) {
            return currentDuration;
        }
    };

    private final LongSupplier ticker;
    private final Cache<StoreKey, Mark> marks;

    Watermarks(LongSupplier ticker) {
        this.ticker = Objects.requireNonNull(ticker, "ticker");
        this.marks = Caffeine.newBuilder()
                .ticker(ticker::getAsLong)
                .executor(Runnable::run)
                .expireAfter(UNTIL_RETENTION_ENDS)
                .build();
    }

    /** The aggregate's watermark, or 0 when none is remembered. */
    long get(StoreKey aggregate) {
        Objects.requireNonNull(aggregate, "aggregate");
        Mark mark = marks.getIfPresent(aggregate);
        return mark == null || !mark.liveAt(ticker.getAsLong()) ? 0 : mark.number;
    }

    /**
     * Raises the aggregate's watermark to {@code advance.number()} unless it is at or above it, and in either case
     * keeps it for {@code advance.retention()} from now. Atomic per aggregate.
     */
    void raise(SequenceAdvance advance) {
        long keep = CaffeineDedupStore.nanos(advance.retention());
        marks.asMap().compute(advance.aggregate(), (aggregate, mark) -> {
            long now = ticker.getAsLong();
            long number = mark != null && mark.liveAt(now) ? Math.max(mark.number, advance.number()) : advance.number();
            return new Mark(number, now + keep);
        });
    }

    /** Forgets every watermark; for {@link CaffeineDedupStore#close()}. */
    void clear() {
        marks.invalidateAll();
        marks.cleanUp();
    }

    /** How many watermarks are held, expired ones not yet removed included; for tests. */
    long count() {
        marks.cleanUp();
        return marks.estimatedSize();
    }

    /** A watermark and when it is forgotten, on the ticker. Immutable. */
    private record Mark(long number, long expiresAt) {
        boolean liveAt(long now) {
            return expiresAt - now > 0;
        }
    }
}
