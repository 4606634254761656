package dev.idem.store.caffeine;

import dev.idem.spi.StoreKey;
import java.util.Collection;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.LongSupplier;

/**
 * The completed tier of a {@link CaffeineDedupStore}: completed keys, at most {@code maximumSize} of them,
 * forgotten in the order they were completed, each also forgotten at the end of its retention.
 *
 * <p><b>Why oldest-completed first, and not a Caffeine bounded cache.</b> A redelivery comes soon after the
 * first delivery, so the key to give up at the bound is the one completed longest ago. Caffeine's W-TinyLFU
 * does the opposite for keys that are each written once: a new entry competes for admission with the oldest one
 * and, with the same frequency, loses. Measured with Caffeine 3.2 and a bound of 100,000, after 1,000,000
 * completions 83 % of the keys kept were from the first fifth and 299 of the last 10,000 were kept; a full
 * store ran the handler of a message redelivered 100 messages later again. The upkeep of its frequency sketch
 * and eviction was also most of the store's CPU.
 *
 * <p><b>Structure.</b> A {@link ConcurrentHashMap} from key to completion and a ring of the completions in the
 * order they were written. {@link #put} writes both under one lock and then forgets from the ring's head
 * while more than {@code maximumSize} keys are held or the head's retention has ended, each removal being
 * {@code remove(key, completion)}, so a key completed again, deleted or purged meanwhile is left alone (its
 * ring entry is stale and only dropped). Reads take no lock and answer {@code null} for a completion whose
 * retention has ended, whether or not it was removed yet. With one retention for all keys the ring's order is
 * also their order of expiry; a key with a shorter retention than the keys before it reads as absent once it
 * expires and leaves memory when it reaches the head. When stale entries make the ring longer than twice the
 * keys held (and than {@value #MIN_COMPACT}), the ring is compacted in one pass, so its length stays within
 * a constant factor of the keys held.
 *
 * <p><b>Locks.</b> {@link #put} is called by the store inside a key's lock of its claim map; it takes this
 * tier's lock and, under it, locks of this map's bins. Nothing calls back into the claim map, so the order
 * is always claim map, then this lock, then this map, and cannot cycle. Thread-safe.
 */
final class CompletedKeys {

    /** The ring never grows past this many entries: then each completion forgets the oldest one. */
    static final int MAX_RING = 1 << 30;
    private static final int MIN_COMPACT = 1024;

    private final ConcurrentHashMap<StoreKey, CaffeineDedupStore.Done> byKey;
    private final long maximumSize;
    private final LongSupplier ticker;
    private final ReentrantLock order = new ReentrantLock();
    /** The completions in the order they were written, from {@code head} (oldest) to {@code tail}; guarded by {@code order}. */
    private CaffeineDedupStore.Done[] ring;
    private long head;
    private long tail;

    CompletedKeys(long maximumSize, int initialCapacity, LongSupplier ticker) {
        this.maximumSize = maximumSize;
        this.ticker = ticker;
        int capacity = Math.max(16, Math.min(initialCapacity, (int) Math.min(maximumSize, MAX_RING)));
        this.byKey = new ConcurrentHashMap<>(capacity);
        this.ring = new CaffeineDedupStore.Done[Integer.highestOneBit(capacity - 1) << 1];
    }

    /** The key's completion if its retention has not ended at {@code now}, else {@code null}. */
    CaffeineDedupStore.Done get(StoreKey key, long now) {
        CaffeineDedupStore.Done done = byKey.get(key);
        return done != null && done.liveAt(now) ? done : null;
    }

    /** {@link #get(StoreKey, long)} at the ticker's reading. */
    CaffeineDedupStore.Done get(StoreKey key) {
        CaffeineDedupStore.Done done = byKey.get(key);
        return done != null && done.liveAt(ticker.getAsLong()) ? done : null;
    }

    /** Writes {@code done} for its key, then forgets the oldest completions past the bound or their retention. */
    void put(CaffeineDedupStore.Done done, long now) {
        order.lock();
        try {
            byKey.put(done.key, done);
            append(done);
            forgetOldest(now);
        } finally {
            order.unlock();
        }
    }

    /** Removes the key's completion, live or not, and answers it, or {@code null} if there was none. */
    CaffeineDedupStore.Done remove(StoreKey key) {
        return byKey.remove(key);
    }

    /** Removes the key's completion only if it is still {@code done}. */
    boolean remove(StoreKey key, CaffeineDedupStore.Done done) {
        return byKey.remove(key, done);
    }

    /** Every completion held, including any whose retention ended and which is not removed yet; weakly consistent. */
    Collection<CaffeineDedupStore.Done> all() {
        return byKey.values();
    }

    /** How many completions are held, including any whose retention ended and which is not removed yet. */
    long size() {
        return byKey.mappingCount();
    }

    /** Removes every completion whose retention has ended, wherever it is in the ring. */
    void removeExpired() {
        long now = ticker.getAsLong();
        order.lock();
        try {
            byKey.values().removeIf(done -> !done.liveAt(now));
            forgetOldest(now);
        } finally {
            order.unlock();
        }
    }

    void clear() {
        order.lock();
        try {
            byKey.clear();
            java.util.Arrays.fill(ring, null);
            head = tail = 0;
        } finally {
            order.unlock();
        }
    }

    /** How many entries the ring holds, stale ones included; for tests. */
    long ringLength() {
        order.lock();
        try {
            return tail - head;
        } finally {
            order.unlock();
        }
    }

    private void append(CaffeineDedupStore.Done done) {
        long length = tail - head;
        if (length == ring.length) {
            if (ring.length < MAX_RING) {
                resize(ring.length << 1);
            } else {
                forget(pop());
            }
        }
        ring[(int) (tail++ & (ring.length - 1))] = done;
    }

    private void forgetOldest(long now) {
        // A stale head (its key deleted or completed again since) is only dropped: its remove finds another value.
        while (tail != head) {
            CaffeineDedupStore.Done oldest = ring[(int) (head & (ring.length - 1))];
            if (byKey.mappingCount() <= maximumSize && oldest.liveAt(now)) {
                break;
            }
            forget(pop());
        }
        long length = tail - head;
        if (length > MIN_COMPACT && length > 2 * byKey.mappingCount()) {
            compact();
        }
    }

    private CaffeineDedupStore.Done pop() {
        int at = (int) (head++ & (ring.length - 1));
        CaffeineDedupStore.Done oldest = ring[at];
        ring[at] = null;
        return oldest;
    }

    private void forget(CaffeineDedupStore.Done done) {
        byKey.remove(done.key, done);
    }

    /** Drops the ring's stale entries, keeping the order of the rest. */
    private void compact() {
        CaffeineDedupStore.Done[] kept = new CaffeineDedupStore.Done[ring.length];
        int count = 0;
        for (long i = head; i != tail; i++) {
            CaffeineDedupStore.Done done = ring[(int) (i & (ring.length - 1))];
            if (byKey.get(done.key) == done) {
                kept[count++] = done;
            }
        }
        ring = kept;
        head = 0;
        tail = count;
    }

    private void resize(int capacity) {
        CaffeineDedupStore.Done[] grown = new CaffeineDedupStore.Done[capacity];
        int count = 0;
        for (long i = head; i != tail; i++) {
            grown[count++] = ring[(int) (i & (ring.length - 1))];
        }
        ring = grown;
        head = 0;
        tail = count;
    }
}
