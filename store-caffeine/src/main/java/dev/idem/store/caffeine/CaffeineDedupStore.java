package dev.idem.store.caffeine;

import com.github.benmanes.caffeine.cache.Cache;
import com.github.benmanes.caffeine.cache.Caffeine;
import com.github.benmanes.caffeine.cache.Expiry;
import com.github.benmanes.caffeine.cache.Weigher;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.DedupStore;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.spi.StoredKey;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Objects;
import java.util.Optional;
import java.util.concurrent.ConcurrentMap;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import java.util.function.LongSupplier;

/**
 * A {@link DedupStore} in this process's memory, on a Caffeine cache whose clock is the injected
 * nano ticker. See {@link CaffeineDedupStoreProvider} for what it is good for.
 *
 * <p>Each key maps to an immutable {@link Entry}; every state change replaces the entry atomically
 * for its key. Each entry carries its own deadline, which a variable {@link Expiry} hands to
 * Caffeine: a claim lives until its lease ends plus the request's retention (so that a takeover
 * still sees its attempt count), a completed key until its retention ends. Lease checks compare
 * against the same ticker. All time arithmetic is on differences of ticker readings, which may be
 * negative and may wrap, as {@link System#nanoTime()}'s may.
 *
 * <p>{@code recordStart} replaces the owner's entry with one counting a start more and keeping every
 * deadline; a takeover carries the count over to the new owner's entry, and a release or the claim's
 * expiry forgets it with the entry.
 *
 * <p>As an {@link InspectableDedupStore}: {@code inspect} and {@code delete} are one map read or removal;
 * {@code expiresAt} is the time left on the ticker added to {@link Instant#now()}, exact to the
 * nanosecond of the ticker. {@code stats} visits every entry (a few milliseconds per million keys), is
 * never truncated, and counts while other threads change keys, so it is exact only for a quiet store.
 */
final class CaffeineDedupStore implements InspectableDedupStore {

    // Durations are capped so that a lease plus a retention still fits a signed difference of
    // nanoTime readings (Caffeine caps expiry at about 146 years itself).
    private static final long MAX_NANOS = Long.MAX_VALUE >> 2;
    private static final long MAX_SECONDS = MAX_NANOS / 1_000_000_000L;

    private static final Duplicate MATCHES = new Duplicate(true);
    private static final Duplicate DIFFERS = new Duplicate(false);

    /*
     * Only completed keys count towards maximum-size. Evicting a claimed key would let a second
     * consumer acquire a key whose handler is still running: a duplicate run, the one thing this
     * store exists to prevent. Claims are few (bounded by the runtime's in-flight messages) and
     * leave on their own once their lease and retention end. Losing a completed key to the size
     * bound only means a late redelivery of it runs again, the documented cost of a bound.
     */
    private static final Weigher<StoreKey, Entry> COMPLETED_ONLY = (key, entry) -> entry.completed ? 1 : 0;

    private static final Expiry<StoreKey, Entry> UNTIL_DEADLINE = new Expiry<>() {
        @Override
        public long expireAfterCreate(StoreKey key, Entry entry, long currentTime) {
            return Math.max(0L, entry.expiresAt - currentTime);
        }

        @Override
        public long expireAfterUpdate(StoreKey key, Entry entry, long currentTime, long currentDuration) {
            return Math.max(0L, entry.expiresAt - currentTime);
        }

        @Override
        public long expireAfterRead(StoreKey key, Entry entry, long currentTime, long currentDuration) {
            return currentDuration;
        }
    };

    private final LongSupplier ticker;
    private final long maximumSize;
    private final Cache<StoreKey, Entry> cache;
    private final ConcurrentMap<StoreKey, Entry> map;
    private final Tokens tokens = new Tokens();

    CaffeineDedupStore(long maximumSize, int initialCapacity, LongSupplier ticker) {
        this.ticker = Objects.requireNonNull(ticker, "ticker");
        this.maximumSize = maximumSize;
        Caffeine<StoreKey, Entry> builder = Caffeine.newBuilder()
                .ticker(ticker::getAsLong)
                // Maintenance (eviction, expiry, the frequency sketch) runs on the writing thread that
                // finds it due, under Caffeine's try-lock. On the default executor (the common pool, a
                // single thread on two cores) it fell behind under a hundred writers, whose full write
                // buffer then made every one of them wait on the eviction lock. Answers never depend on
                // it: an expired entry reads as absent before maintenance removes it. Tests call
                // cleanUp() to see its effects.
                .executor(Runnable::run)
                .maximumWeight(maximumSize)
                .weigher(COMPLETED_ONLY)
                .expireAfter(UNTIL_DEADLINE);
        if (initialCapacity > 0) {
            builder.initialCapacity(initialCapacity);
        }
        this.cache = builder.build();
        this.map = cache.asMap();
    }

    @Override
    public List<ClaimResult> claim(List<ClaimRequest> requests) {
        int size = requests.size();
        if (size == 1) {
            return List.of(claim(requests.get(0), null, 0));
        }
        ClaimResult[] results = new ClaimResult[size];
        for (int i = 0; i < size; i++) {
            results[i] = claim(requests.get(i), results, i);
        }
        return List.of(results);
    }

    /**
     * Claims one key. The common answers (fresh, duplicate, in progress) take a single
     * {@code putIfAbsent}, which Caffeine answers without locking when the key is present; only a
     * takeover of a lease that ran out takes the key's lock.
     *
     * @param earlier the results of this batch so far, or {@code null} for a batch of one
     */
    private ClaimResult claim(ClaimRequest request, ClaimResult[] earlier, int count) {
        long now = ticker.getAsLong();
        long token = tokens.next();
        // Made up front so one putIfAbsent answers every common case; for a duplicate it is garbage.
        Entry fresh = Entry.claimed(token, 1, request.fingerprint(), now, nanos(request.lease()),
                nanos(request.retention()), 0);
        Entry existing = map.putIfAbsent(request.key(), fresh);
        if (existing == null) {
            return new Acquired(token, 1);
        }
        if (existing.completed) {
            return duplicate(existing, request.fingerprint());
        }
        long remaining = existing.leaseUntil - now;
        if (remaining > 0) {
            return new InProgress(Duration.ofNanos(remaining));
        }
        Takeover takeover = new Takeover(request, token, earlier, count);
        map.compute(request.key(), takeover);
        return takeover.result;
    }

    @Override
    public boolean complete(StoreKey key, long token, Duration retention) {
        // A read and a compare-and-replace of the entry instance: Caffeine's compute path would
        // allocate a capturing lambda and scratch arrays on every message, and completes are as
        // frequent as claims.
        long retentionNanos = nanos(retention);
        while (true) {
            Entry entry = map.get(key);
            if (entry == null) {
                return false;
            }
            if (entry.completed) {
                // A retry by the owner whose completion already landed succeeds again.
                return entry.token == token;
            }
            if (entry.token != token) {
                return false;
            }
            if (map.replace(key, entry, entry.completedAt(ticker.getAsLong(), retentionNanos))) {
                return true;
            }
            // Renewed, taken over or completed meanwhile: decide on the entry as it is now.
        }
    }

    @Override
    public boolean release(StoreKey key, long token) {
        Release op = new Release(token);
        map.computeIfPresent(key, op);
        return op.done;
    }

    @Override
    public boolean renew(StoreKey key, long token, Duration lease) {
        if (lease.isNegative() || lease.isZero()) {
            throw new IllegalArgumentException("lease must be positive: " + lease);
        }
        Renew op = new Renew(token, nanos(lease));
        map.computeIfPresent(key, op);
        return op.done;
    }

    @Override
    public int recordStart(StoreKey key, long token) {
        while (true) {
            // A compare-and-replace, as in complete: no capturing lambda per call, and only racing
            // calls on the same key ever loop.
            Entry entry = map.get(key);
            if (entry == null || !entry.claimedBy(token)) {
                return 0;
            }
            Entry started = entry.withOneMoreStart();
            if (map.replace(key, entry, started)) {
                return started.starts;
            }
            // Renewed, taken over, released or started meanwhile: decide on the entry as it is now.
        }
    }

    @Override
    public Optional<StoredKey> inspect(StoreKey key) {
        Objects.requireNonNull(key, "key");
        Entry entry = map.get(key);
        long now = ticker.getAsLong();
        if (entry == null || !entry.liveAt(now)) {
            return Optional.empty();
        }
        StoredKey.State state = entry.completed ? StoredKey.State.COMPLETED : StoredKey.State.CLAIMED;
        long left = (entry.completed ? entry.expiresAt : entry.leaseUntil) - now;
        return Optional.of(new StoredKey(state, entry.attempts, entry.fingerprint, Instant.now().plusNanos(left)));
    }

    @Override
    public boolean delete(StoreKey key) {
        Objects.requireNonNull(key, "key");
        Entry removed = map.remove(key);
        return removed != null && removed.liveAt(ticker.getAsLong());
    }

    @Override
    public StoreStats stats() {
        long now = ticker.getAsLong();
        long claimed = 0;
        long completed = 0;
        for (Entry entry : map.values()) {
            if (entry.liveAt(now)) {
                if (entry.completed) {
                    completed++;
                } else {
                    claimed++;
                }
            }
        }
        return new StoreStats(claimed, completed, false);
    }

    @Override
    public void close() {
        cache.invalidateAll();
        cache.cleanUp();
    }

    /** Runs pending evictions and expirations now; for tests. */
    void cleanUp() {
        cache.cleanUp();
    }

    /** How many completed keys are held: the weight the size bound applies to; for tests. */
    long completedCount() {
        cache.cleanUp();
        return cache.policy().eviction().orElseThrow().weightedSize().orElseThrow();
    }

    /** How many keys are held, claimed or completed; for tests. */
    long keyCount() {
        cache.cleanUp();
        return cache.estimatedSize();
    }

    @Override
    public String toString() {
        return "CaffeineDedupStore[maximum-size=" + maximumSize + "]";
    }

    private static ClaimResult duplicate(Entry completed, String fingerprint) {
        String stored = completed.fingerprint;
        return stored == null || fingerprint == null || stored.equals(fingerprint) ? MATCHES : DIFFERS;
    }

    /** A duration in nanoseconds, negative as zero, capped at {@link #MAX_NANOS}. */
    static long nanos(Duration duration) {
        long seconds = duration.getSeconds();
        if (seconds < 0) {
            return 0;
        }
        return seconds >= MAX_SECONDS ? MAX_NANOS : duration.toNanos();
    }

    /** The state of one key. Immutable: a change is a new entry, swapped in atomically. */
    static final class Entry {
        final long token;
        final int attempts;
        final String fingerprint;
        final boolean completed;
        /** Claims only: when the lease ends. */
        final long leaseUntil;
        /** Claims only: how long the claim is remembered after its lease, for renewals. */
        final long claimRetention;
        final long expiresAt;
        /** Claims only: the handler starts recorded since the key was first claimed, across takeovers. */
        final int starts;

        private Entry(long token, int attempts, String fingerprint, boolean completed, long leaseUntil,
                long claimRetention, long expiresAt, int starts) {
            this.token = token;
            this.attempts = attempts;
            this.fingerprint = fingerprint;
            this.completed = completed;
            this.leaseUntil = leaseUntil;
            this.claimRetention = claimRetention;
            this.expiresAt = expiresAt;
            this.starts = starts;
        }

        static Entry claimed(long token, int attempts, String fingerprint, long now, long lease, long retention,
                int starts) {
            long leaseUntil = now + lease;
            return new Entry(token, attempts, fingerprint, false, leaseUntil, retention, leaseUntil + retention,
                    starts);
        }

        Entry completedAt(long now, long retention) {
            return new Entry(token, attempts, fingerprint, true, 0, 0, now + retention, 0);
        }

        /** This claim with one more start recorded, every deadline as it was. */
        Entry withOneMoreStart() {
            return new Entry(token, attempts, fingerprint, false, leaseUntil, claimRetention, expiresAt, starts + 1);
        }

        /** Whether a claim would see this entry at {@code now}: completed and remembered, or leased. */
        boolean liveAt(long now) {
            return completed ? expiresAt - now > 0 : leaseUntil - now > 0;
        }

        boolean claimedBy(long owner) {
            return !completed && token == owner;
        }
    }

    /**
     * The slow path of a claim, under the key's lock: the lease of the entry seen ran out. The entry
     * is looked at afresh, since another claim may have taken it over or completed it meanwhile.
     */
    private final class Takeover implements BiFunction<StoreKey, Entry, Entry> {
        private final ClaimRequest request;
        private final long token;
        private final ClaimResult[] earlier;
        private final int count;
        ClaimResult result;

        Takeover(ClaimRequest request, long token, ClaimResult[] earlier, int count) {
            this.request = request;
            this.token = token;
            this.earlier = earlier;
            this.count = count;
        }

        @Override
        public Entry apply(StoreKey key, Entry entry) {
            long now = ticker.getAsLong();
            if (entry == null) {
                result = new Acquired(token, 1);
                return Entry.claimed(token, 1, request.fingerprint(), now, nanos(request.lease()),
                        nanos(request.retention()), 0);
            }
            if (entry.completed) {
                result = duplicate(entry, request.fingerprint());
                return entry;
            }
            long remaining = entry.leaseUntil - now;
            // A lease shorter than the batch may end before the batch does; a key repeated in the
            // batch must still be acquired only once.
            if (remaining > 0 || acquiredEarlierInBatch(entry.token)) {
                result = new InProgress(Duration.ofNanos(Math.max(1L, remaining)));
                return entry;
            }
            int attempt = entry.attempts + 1;
            result = new Acquired(token, attempt);
            return Entry.claimed(token, attempt, request.fingerprint(), now, nanos(request.lease()),
                    nanos(request.retention()), entry.starts);
        }

        private boolean acquiredEarlierInBatch(long owner) {
            if (earlier == null) {
                return false;
            }
            for (int i = 0; i < count; i++) {
                if (earlier[i] instanceof Acquired a && a.token() == owner) {
                    return true;
                }
            }
            return false;
        }
    }

    private static final class Release implements BiFunction<StoreKey, Entry, Entry> {
        private final long token;
        boolean done;

        Release(long token) {
            this.token = token;
        }

        @Override
        public Entry apply(StoreKey key, Entry entry) {
            if (!entry.claimedBy(token)) {
                return entry;
            }
            done = true;
            return null;
        }
    }

    private final class Renew implements BiFunction<StoreKey, Entry, Entry> {
        private final long token;
        private final long lease;
        boolean done;

        Renew(long token, long lease) {
            this.token = token;
            this.lease = lease;
        }

        @Override
        public Entry apply(StoreKey key, Entry entry) {
            if (!entry.claimedBy(token)) {
                return entry;
            }
            done = true;
            return Entry.claimed(token, entry.attempts, entry.fingerprint, ticker.getAsLong(), lease,
                    entry.claimRetention, entry.starts);
        }
    }

    /**
     * Unique fencing tokens without one shared counter on the hot path: each thread takes a block
     * of tokens from a single {@link AtomicLong} and counts through it alone, so threads claiming
     * in parallel do not all contend on one cache line. Tokens are unique within the store; they
     * are not ordered across threads, and nothing needs them to be.
     */
    static final class Tokens {
        private static final long BLOCK = 1024;

        private final AtomicLong blocks = new AtomicLong(1);
        private final ThreadLocal<long[]> range = ThreadLocal.withInitial(() -> new long[2]);

        long next() {
            long[] r = range.get();
            if (r[0] == r[1]) {
                long start = blocks.getAndAdd(BLOCK);
                r[0] = start;
                r[1] = start + BLOCK;
            }
            return r[0]++;
        }
    }
}
