package dev.idem.store.caffeine;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.FencingTokens;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.KeyFilter;
import dev.idem.spi.KeyPage;
import dev.idem.spi.ListedKey;
import dev.idem.spi.PurgeBatch;
import dev.idem.spi.ReplyStore;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StepStore;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.spi.StoredKey;
import dev.idem.spi.StoredReply;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.BiFunction;
import java.util.function.LongSupplier;
import java.util.function.Supplier;

/**
 * A {@link DedupStore} in this process's memory, in two tiers. See {@link CaffeineDedupStoreProvider}
 * for what it is good for.
 *
 * <p><b>Tiers.</b> Claims live in a plain {@link ConcurrentHashMap}, never bounded: they are few (at
 * most the runtimes' in-flight messages plus abandoned claims not yet forgotten), and evicting one would
 * let a second consumer acquire a key whose handler is still running, the one thing this store exists to
 * prevent. Only completed keys go into the bounded tier, {@link CompletedKeys}, at most {@code maximum-size}
 * of them, forgotten oldest-completed first and each at the end of its retention; losing one to the bound
 * only means a late redelivery of it runs again, the documented cost of a bound. So a message costs one
 * bounded write (its completion) and not two.
 *
 * <p><b>Why every operation is atomic per key across the tiers.</b> Every change of a key runs inside
 * {@code claims.compute} for that key, which the map serializes per key, and the changes that involve the
 * completed tier make their read or write of it inside that same compute: a claim re-reads it before
 * creating a claim, {@code complete} writes it, {@code delete} removes from it. Two changes of one key
 * therefore never interleave, and each sees the other wholly or not at all. Nothing else writes to the
 * completed tier; its own upkeep only removes from it (retention, size bound), and a completed key going absent
 * is a transition of its own that needs no claim-map lock. From this follows the invariant every
 * operation relies on: a key never holds both a remembered claim and a live completion (a claim is created
 * only under the lock, after finding no completion; a completion only under the lock, by {@code complete}
 * in the compute that drops the claim). {@code complete} writes the completion before its compute drops
 * the claim, so there is no instant at which the key is in neither tier; the only read outside the key's lock,
 * a claim looking into the completed tier first (optimistically, or under that tier's read lock if a write
 * came in between), therefore sees a completion from the moment it is written (that
 * write is where {@code complete} takes effect), and a claim that missed it blocks on the key's lock and
 * re-reads the tier there, finding the completion: it answers {@code Duplicate}, never {@code Acquired}.
 * {@code inspect} runs under the lock as well, so it never sees the key half-moved.
 *
 * <p><b>Time.</b> A claim carries its deadlines (lease end, and the lease end plus the request's
 * retention, until which a takeover still counts on from its attempts and starts); they are checked
 * lazily under the key's lock against the nano ticker as read when the call began, once for a whole batch of
 * claims or completions (a reading some microseconds old makes a lease it grants end that much sooner, and a
 * deadline it checks look that much further away), and a claim past its remembered-until time counts
 * as absent (and is dropped by whichever operation meets it). Time only moves forward, so such a claim
 * never comes back; the sweep, which removes abandoned claims that nobody touches again, removes only
 * those and only the very instance it looked at ({@code remove(key, value)}), so it changes no key's
 * visible state and never removes a claim renewed or taken over meanwhile. It runs outside any compute
 * (the map forbids touching other keys inside one), on one thread at a time, once the claims made
 * since the last sweep reach the number of claims that sweep left (and at least {@value #SWEEP_EVERY}):
 * a sweep then visits what the last one left plus at most the claims made since, so at most two
 * claims per claim made, amortized, and an abandoned claim leaves within about that many claims after
 * its time ran out. All time arithmetic is on differences of ticker readings, which may
 * be negative and may wrap, as {@link System#nanoTime()}'s may.
 *
 * <p><b>Locks.</b> Under a claim-map lock the store calls into the completed tier, which may forget other
 * keys' completions there and never calls back into the claim map, so the lock order is always claim map,
 * then completed tier, and cannot cycle.
 *
 * <p>{@code recordStart} replaces the owner's claim with one counting a start more and keeping every
 * deadline; a takeover carries the count over to the new owner's claim, and a release or the claim being
 * forgotten drops it with the claim.
 *
 * <p>As an {@link InspectableDedupStore}: {@code inspect} and {@code delete} are one compute on the claim
 * map with one read or removal in the cache; {@code expiresAt} is the time left on the ticker added to
 * {@link Instant#now()}, exact to the nanosecond of the ticker. {@code stats} visits every claim and every
 * completed key (a few milliseconds per million keys), is never truncated, and counts while other threads
 * change keys (a key completing meanwhile may be counted in both tiers or in neither, and one the completed tier
 * compacts meanwhile twice), so it is exact only for a quiet store.
 *
 * <p>{@code list} pages through a namespace in the order of its IDs ({@link String#compareTo}); the cursor is
 * the last ID listed, so each page is the {@code limit} smallest IDs after it, and a key present throughout a
 * listing is listed exactly once whatever else changes. Each page visits every claim and every completed key
 * (keeping the smallest {@code limit} in a tree), so a whole listing costs that once per page: use pages of a
 * thousand or more on a large store. It reads the claim tier before the completed tier, so a key completing
 * during the call (written to the completed tier before it leaves the claim tier) is seen in one or the other.
 * {@code purge} visits the completed keys and deletes each that qualifies under its key's lock, as
 * {@code delete} does, after checking it again there; it stops after {@code limit} keys and the next call starts
 * over, which finds only what is left.
 *
 * <p>As a {@link SequencedDedupStore}: the watermarks live in a cache of their own ({@link Watermarks}), never
 * evicted by the keys' size bound, each forgotten its retention after its last change. A completion with an
 * advance raises the watermark inside the compute that completes the key, before the completion is written, so
 * whoever sees the key completed sees the watermark raised; a completion the token does not own raises nothing,
 * and a completion retried by its owner raises again (a no-op unless the watermark was forgotten meanwhile).
 *
 * <p>As a {@link StepStore}: a key's steps live in a map of their own ({@link #steps}), written only under the key's
 * lock in the claim map, after the owner's claim was checked there, so a record and a takeover never interleave.
 * Each step is kept until the claim's retention after the earlier of its record and that claim's lease end; a
 * release leaves the steps, a completion drops them in the compute that completes the key (the completed tier may
 * forget a completion before its retention when full, and a key claimed afresh then must find no step of its earlier
 * life), and so do {@code delete} and the sweep, once every step of a key has expired.
 *
 * <p>As a {@link ReplyStore}: a completion's reply lives in a map of its own ({@link #replies}), with the token of the
 * completion it came with. The compute that completes the key writes the reply before the completion, so whoever
 * sees the key completed sees its reply; {@code reply} reads both under the key's lock, and answers a reply only when
 * its token is the live completion's. The completed tier flags a completion that came with a reply, and tells the
 * store when such a completion leaves it (its retention, the size bound, a newer completion of the key, a delete or a
 * purge), which drops the reply then: so replies are held no longer than their completions, and their number is
 * bounded by {@code maximum-size} as the completions' is. Their bytes are not: each completion with a reply holds it
 * in this process's memory (at most {@value ReplyStore#MAX_REPLY_BYTES} bytes of payload and headers).
 */
final class CaffeineDedupStore implements InspectableDedupStore, SequencedDedupStore, StepStore, ReplyStore {

    // Durations are capped so that a lease plus a retention still fits a signed difference of
    // nanoTime readings.
    private static final long MAX_NANOS = Long.MAX_VALUE >> 2;
    private static final long MAX_SECONDS = MAX_NANOS / 1_000_000_000L;

    /** The fewest claims between two sweeps of the claim map; a power of two, as the trigger masks the claim number. */
    static final int SWEEP_EVERY = 1024;

    /** The cursor of a purge that stopped at its limit: the next call starts over, finding what is left. */
    private static final String MORE_TO_PURGE = "caffeine:again";

    private static final Duplicate MATCHES = new Duplicate(true);
    private static final Duplicate DIFFERS = new Duplicate(false);

    private final LongSupplier ticker;
    private final long maximumSize;
    /** Claimed keys, remembered or not yet swept; never bounded. */
    private final ConcurrentHashMap<StoreKey, Claim> claims = new ConcurrentHashMap<>();
    /** Completed keys, bounded by maximum-size (oldest-completed forgotten first) and expiring at the end of their retention. */
    private final CompletedKeys completed;
    private final ClaimNumbers claimNumbers = new ClaimNumbers();
    private final Watermarks watermarks;
    /** Durable steps by key; changed only under the key's lock in {@link #claims}. */
    private final ConcurrentHashMap<StoreKey, KeySteps> steps = new ConcurrentHashMap<>();
    /**
     * Replies by key, with the token of the completion they came with; written only under the key's lock in
     * {@link #claims}, removed there or when the completed tier tells that their completion left.
     */
    private final ConcurrentHashMap<StoreKey, KeptReply> replies = new ConcurrentHashMap<>();
    private final AtomicBoolean sweeping = new AtomicBoolean();
    /** The claim number that triggered the last sweep. */
    private volatile long lastSweep;
    /** How many claims the last sweep left: the next is due once as many claims (at least SWEEP_EVERY) followed it. */
    private volatile int leftBySweep;

    CaffeineDedupStore(long maximumSize, int initialCapacity, LongSupplier ticker) {
        this.ticker = Objects.requireNonNull(ticker, "ticker");
        this.maximumSize = maximumSize;
        this.completed = new CompletedKeys(maximumSize, initialCapacity, ticker, this::replyForgotten);
        this.watermarks = new Watermarks(ticker);
    }

    /** Reads the ticker once for the whole batch (see the class comment's Time paragraph). */
    @Override
    public List<ClaimResult> claim(List<ClaimRequest> requests) {
        int size = requests.size();
        long now = ticker.getAsLong();
        if (size == 1) {
            long number = claimNumbers.next();
            ClaimResult result = claim(requests.get(0), FencingTokens.next(), null, 0, now);
            if ((number & (SWEEP_EVERY - 1)) == 0) {
                sweepIfDue(number);
            }
            return List.of(result);
        }
        List<StoreKey> keys = new ArrayList<>(size);
        for (int i = 0; i < size; i++) {
            keys.add(requests.get(i).key());
        }
        completed.warmLookups(keys);
        ClaimResult[] results = new ClaimResult[size];
        long sweepNumber = 0;
        for (int i = 0; i < size; i++) {
            long number = claimNumbers.next();
            results[i] = claim(requests.get(i), FencingTokens.next(), results, i, now);
            if ((number & (SWEEP_EVERY - 1)) == 0) {
                sweepNumber = number;
            }
        }
        // After the batch, not within it: a key repeated in the batch must find its earlier claim.
        if (sweepNumber != 0) {
            sweepIfDue(sweepNumber);
        }
        return List.of(results);
    }

    /**
     * Claims one key at {@code now}. A duplicate is answered from the completed tier without the key's lock;
     * everything else is decided under the key's lock in the claim map, where the completed tier is looked at again.
     *
     * @param earlier the results of this batch so far, or {@code null} for a batch of one
     */
    private ClaimResult claim(ClaimRequest request, long token, ClaimResult[] earlier, int count, long now) {
        Done done = completed.get(request.key(), now);
        if (done != null) {
            return duplicate(done, request.fingerprint());
        }
        ClaimOp op = new ClaimOp(request, token, earlier, count, now);
        claims.compute(request.key(), op);
        return op.result;
    }

    @Override
    public boolean complete(StoreKey key, long token, Duration retention) {
        return complete(key, token, retention, null);
    }

    @Override
    public boolean completeAndAdvance(StoreKey key, long token, Duration retention, SequenceAdvance advance) {
        return complete(key, token, retention, Objects.requireNonNull(advance, "advance"));
    }

    @Override
    public long watermark(StoreKey aggregate) {
        return watermarks.get(aggregate);
    }

    @Override
    public boolean completeWithReply(StoreKey key, long token, Duration retention, StoredReply reply) {
        ReplyStore.check(reply);
        return complete(key, token, retention, null, reply, ticker.getAsLong());
    }

    /** Completes under the key's lock, raising {@code advance} there too unless it is {@code null}. */
    private boolean complete(StoreKey key, long token, Duration retention, SequenceAdvance advance) {
        return complete(key, token, retention, advance, null, ticker.getAsLong());
    }

    /**
     * Completes under the key's lock at {@code now}, with {@code advance} and {@code reply} unless they are
     * {@code null}.
     */
    private boolean complete(StoreKey key, long token, Duration retention, SequenceAdvance advance,
            StoredReply reply, long now) {
        CompleteOp op = new CompleteOp(token, nanos(retention), advance, reply, now);
        claims.compute(key, op);
        return op.done;
    }

    @Override
    public Optional<StoredReply> reply(StoreKey key) {
        Objects.requireNonNull(key, "key");
        ReplyRead op = new ReplyRead();
        claims.compute(key, op);
        return Optional.ofNullable(op.read);
    }

    /** The completed tier's word that the completion of {@code token} left: its reply goes with it. */
    private void replyForgotten(StoreKey key, long token) {
        replies.computeIfPresent(key, (k, kept) -> kept.token == token ? null : kept);
    }

    /**
     * One pass over the batch, each key completed under its own lock exactly as {@link #complete} does it (and,
     * with an advance, as {@link #completeAndAdvance} does); no
     * lock spans two keys, so a batch never holds up claims of its other keys. Nothing here can fail part way. A
     * request's reply is stored in its key's compute, as {@link #completeWithReply} stores it (its weight was checked
     * when the request was made). The ticker is read once for the batch, as {@link #claim} does.
     */
    @Override
    public List<CompletionResult> completeAll(List<CompletionRequest> requests) {
        List<CompletionResult> results = new ArrayList<>(requests.size());
        List<StoreKey> keys = new ArrayList<>(requests.size());
        for (CompletionRequest request : requests) {
            keys.add(request.key());
        }
        completed.warmPuts(keys);
        long now = ticker.getAsLong();
        for (CompletionRequest request : requests) {
            results.add(complete(request.key(), request.token(), request.retention(), request.advance(),
                    request.reply(), now) ? CompletionResult.COMPLETED : CompletionResult.NOT_OWNER);
        }
        return results;
    }

    @Override
    public boolean release(StoreKey key, long token) {
        OwnerChange op = new OwnerChange(token, (claim, now) -> null);
        claims.computeIfPresent(key, op);
        return op.done;
    }

    @Override
    public boolean renew(StoreKey key, long token, Duration lease) {
        if (lease.isNegative() || lease.isZero()) {
            throw new IllegalArgumentException("lease must be positive: " + lease);
        }
        long leaseNanos = nanos(lease);
        OwnerChange op = new OwnerChange(token, (claim, now) -> claim.renewedAt(now, leaseNanos));
        claims.computeIfPresent(key, op);
        return op.done;
    }

    @Override
    public int recordStart(StoreKey key, long token) {
        OwnerChange op = new OwnerChange(token, (claim, now) -> claim.withOneMoreStart());
        claims.computeIfPresent(key, op);
        return op.done ? op.changed.starts : 0;
    }

    @Override
    public Optional<Map<String, byte[]>> steps(StoreKey key, long token) {
        Objects.requireNonNull(key, "key");
        StepsRead op = new StepsRead(token);
        claims.computeIfPresent(key, op);
        return Optional.ofNullable(op.read);
    }

    @Override
    public boolean recordStep(StoreKey key, long token, String name, byte[] value) {
        Objects.requireNonNull(key, "key");
        Objects.requireNonNull(value, "value");
        StepStore.check(name, value);
        StepRecord op = new StepRecord(token, name, value.clone());
        claims.computeIfPresent(key, op);
        return op.done;
    }

    @Override
    public Optional<StoredKey> inspect(StoreKey key) {
        Objects.requireNonNull(key, "key");
        Inspect op = new Inspect();
        claims.compute(key, op);
        return Optional.ofNullable(op.seen);
    }

    @Override
    public boolean delete(StoreKey key) {
        Objects.requireNonNull(key, "key");
        Delete op = new Delete();
        claims.compute(key, op);
        return op.wasLive;
    }

    @Override
    public StoreStats stats() {
        long now = ticker.getAsLong();
        long claimed = 0;
        for (Claim claim : claims.values()) {
            if (claim.leasedAt(now)) {
                claimed++;
            }
        }
        return new StoreStats(claimed, completed.countLive(now), false);
    }

    @Override
    public KeyPage list(String namespace, KeyFilter filter, String cursor, int limit) {
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(filter, "filter");
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        long now = ticker.getAsLong();
        Instant wallNow = Instant.now();
        TreeMap<String, ListedKey> page = new TreeMap<>();
        boolean more = false;
        // Claims first: a key completing meanwhile is written to the completed tier before it leaves this one.
        for (Map.Entry<StoreKey, Claim> entry : claims.entrySet()) {
            Claim claim = entry.getValue();
            if (claim.leasedAt(now)) {
                more |= offer(page, limit, entry.getKey(), namespace, filter, cursor, () -> new StoredKey(
                        StoredKey.State.CLAIMED, claim.attempts, claim.fingerprint,
                        wallNow.plusNanos(claim.leaseUntil - now), claim.starts));
            }
        }
        for (Done done : completed.all()) {
            if (done.liveAt(now)) {
                more |= offer(page, limit, done.key, namespace, filter, cursor, () -> new StoredKey(
                        StoredKey.State.COMPLETED, done.attempts, done.fingerprint,
                        wallNow.plusNanos(done.expiresAt - now)));
            }
        }
        return new KeyPage(List.copyOf(page.values()), more ? page.lastKey() : null);
    }

    /**
     * Keeps {@code key} in {@code page} if it belongs to the listing after {@code cursor} and is among its
     * {@code limit} smallest IDs so far; answers whether a key of the listing was left out for the limit.
     */
    private static boolean offer(TreeMap<String, ListedKey> page, int limit, StoreKey key, String namespace,
            KeyFilter filter, String cursor, Supplier<StoredKey> seen) {
        String id = key.id();
        if (!key.namespace().equals(namespace) || (cursor != null && id.compareTo(cursor) <= 0)
                || !id.startsWith(filter.prefix())) {
            return false;
        }
        StoredKey stored = seen.get();
        if (filter.state() != null && filter.state() != stored.state()) {
            return false;
        }
        // A key in both tiers (completing right now) keeps its first sighting.
        if (page.containsKey(id)) {
            return false;
        }
        if (page.size() < limit) {
            page.put(id, new ListedKey(key, stored));
            return false;
        }
        if (id.compareTo(page.lastKey()) < 0) {
            page.pollLastEntry();
            page.put(id, new ListedKey(key, stored));
        }
        return true;
    }

    @Override
    public PurgeBatch purge(String namespace, Instant expiringBefore, String cursor, int limit) {
        Objects.requireNonNull(namespace, "namespace");
        Objects.requireNonNull(expiringBefore, "expiringBefore");
        if (limit < 1) {
            throw new IllegalArgumentException("limit must be at least 1: " + limit);
        }
        Duration within = Duration.between(Instant.now(), expiringBefore);
        if (within.isNegative() || within.isZero()) {
            return new PurgeBatch(0, null);
        }
        long withinNanos = nanos(within);
        long deleted = 0;
        for (Done entry : completed.all()) {
            StoreKey key = entry.key;
            if (key.namespace().equals(namespace) && qualifies(entry, ticker.getAsLong(), withinNanos)) {
                PurgeOne op = new PurgeOne(withinNanos);
                claims.compute(key, op);
                if (op.deleted && ++deleted == limit) {
                    return new PurgeBatch(deleted, MORE_TO_PURGE);
                }
            }
        }
        return new PurgeBatch(deleted, null);
    }

    private static boolean qualifies(Done done, long now, long withinNanos) {
        return done.liveAt(now) && done.expiresAt - now < withinNanos;
    }

    @Override
    public void close() {
        claims.clear();
        completed.clear();
        watermarks.clear();
        steps.clear();
        replies.clear();
    }

    /** Runs pending evictions and expirations of the completed tier now; for tests. */
    void cleanUp() {
        completed.removeExpired();
    }

    /** How many completed keys are held: what the size bound applies to; for tests. */
    long completedCount() {
        completed.removeExpired();
        return completed.size();
    }

    /** How many claims the claim map holds, including any not yet swept after they were forgotten; for tests. */
    int claimCount() {
        return claims.size();
    }

    /** How many replies are held; for tests. */
    int replyCount() {
        return replies.size();
    }

    /** How many keys are held in both tiers; for tests. */
    long keyCount() {
        return completedCount() + claimCount();
    }

    @Override
    public String toString() {
        return "CaffeineDedupStore[maximum-size=" + maximumSize + "]";
    }

    /**
     * Sweeps forgotten claims out of the claim map once, since the last sweep, as many claims were made
     * as that sweep left claims behind (and at least {@link #SWEEP_EVERY}). A sweep then visits at
     * most what the last one left plus the claims made since, so at most two claims per claim made,
     * amortized, and a map growing with abandoned claims is swept at least every time it doubles. Called
     * by the thread whose claim number hit a multiple of {@link #SWEEP_EVERY}, outside any compute.
     */
    private void sweepIfDue(long number) {
        if (number - lastSweep < Math.max(SWEEP_EVERY, leftBySweep) || !sweeping.compareAndSet(false, true)) {
            return;
        }
        try {
            long now = ticker.getAsLong();
            // Removes each entry only if it still maps to the claim tested (ConcurrentHashMap.remove(k, v)).
            claims.values().removeIf(claim -> !claim.rememberedAt(now));
            // The same for steps whose every entry expired (a released key never claimed again).
            steps.values().removeIf(kept -> kept.expiredAt(now));
            leftBySweep = claims.size();
            lastSweep = number;
        } finally {
            sweeping.set(false);
        }
    }

    private static ClaimResult duplicate(Done done, String fingerprint) {
        String stored = done.fingerprint;
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

    /** A claimed key. Immutable: a change is a new claim, swapped in under the key's lock. */
    static final class Claim {
        final long token;
        final int attempts;
        final String fingerprint;
        /** When the lease ends. */
        final long leaseUntil;
        /** How long the claim is remembered after its lease, for a takeover's counts. */
        final long retention;
        /** When the claim is forgotten: its lease end plus its retention. */
        final long rememberedUntil;
        /** The handler starts recorded since the key was first claimed, across takeovers. */
        final int starts;

        private Claim(long token, int attempts, String fingerprint, long leaseUntil, long retention, int starts) {
            this.token = token;
            this.attempts = attempts;
            this.fingerprint = fingerprint;
            this.leaseUntil = leaseUntil;
            this.retention = retention;
            this.rememberedUntil = leaseUntil + retention;
            this.starts = starts;
        }

        static Claim of(long token, int attempts, String fingerprint, long now, long lease, long retention,
                int starts) {
            return new Claim(token, attempts, fingerprint, now + lease, retention, starts);
        }

        /** This claim with its lease running {@code lease} from {@code now}, its retention after that. */
        Claim renewedAt(long now, long lease) {
            return new Claim(token, attempts, fingerprint, now + lease, retention, starts);
        }

        /** This claim with one more start recorded, every deadline as it was. */
        Claim withOneMoreStart() {
            return new Claim(token, attempts, fingerprint, leaseUntil, retention, starts + 1);
        }

        boolean leasedAt(long now) {
            return leaseUntil - now > 0;
        }

        /** Whether the claim still counts at {@code now}; once not, it is as good as absent, for good. */
        boolean rememberedAt(long now) {
            return rememberedUntil - now > 0;
        }
    }

    /** A completed key. Immutable. */
    static final class Done {
        final StoreKey key;
        final long token;
        final int attempts;
        final String fingerprint;
        final long expiresAt;

        Done(StoreKey key, long token, int attempts, String fingerprint, long expiresAt) {
            this.key = key;
            this.token = token;
            this.attempts = attempts;
            this.fingerprint = fingerprint;
            this.expiresAt = expiresAt;
        }

        boolean liveAt(long now) {
            return expiresAt - now > 0;
        }
    }

    /**
     * A claim under the key's lock, once the completed tier showed no completion. A present claim means
     * the completed tier holds none (the invariant above); an absent one means the tier must be read
     * again, since a completion may have landed since the lock-free read.
     */
    private final class ClaimOp implements BiFunction<StoreKey, Claim, Claim> {
        private final ClaimRequest request;
        private final long token;
        private final ClaimResult[] earlier;
        private final int count;
        private final long now;
        ClaimResult result;

        ClaimOp(ClaimRequest request, long token, ClaimResult[] earlier, int count, long now) {
            this.request = request;
            this.token = token;
            this.earlier = earlier;
            this.count = count;
            this.now = now;
        }

        @Override
        public Claim apply(StoreKey key, Claim claim) {
            if (claim == null) {
                Done done = completed.get(key, now);
                if (done != null) {
                    result = duplicate(done, request.fingerprint());
                    return null;
                }
            } else {
                long remaining = claim.leaseUntil - now;
                // A lease shorter than the batch may end before the batch does; a key repeated in the
                // batch must still be acquired only once.
                if (remaining > 0 || acquiredEarlierInBatch(claim.token)) {
                    result = new InProgress(Duration.ofNanos(Math.max(1L, remaining)));
                    return claim;
                }
                if (claim.rememberedAt(now)) {
                    int attempt = claim.attempts + 1;
                    result = new Acquired(token, attempt);
                    return Claim.of(token, attempt, request.fingerprint(), now, nanos(request.lease()),
                            nanos(request.retention()), claim.starts);
                }
                // Forgotten: as if absent.
            }
            result = new Acquired(token, 1);
            return Claim.of(token, 1, request.fingerprint(), now, nanos(request.lease()),
                    nanos(request.retention()), 0);
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

    /**
     * Completion under the key's lock: the watermark is raised if there is an advance, the reply written if there is
     * one, the completion is written to the completed tier, then the claim is dropped by returning {@code null}, so
     * the key is never in neither tier, and never seen completed without its reply.
     */
    private final class CompleteOp implements BiFunction<StoreKey, Claim, Claim> {
        private final long token;
        private final long retention;
        private final SequenceAdvance advance;
        private final StoredReply reply;
        private final long now;
        boolean done;

        CompleteOp(long token, long retention, SequenceAdvance advance, StoredReply reply, long now) {
            this.token = token;
            this.retention = retention;
            this.advance = advance;
            this.reply = reply;
            this.now = now;
        }

        @Override
        public Claim apply(StoreKey key, Claim claim) {
            if (claim == null) {
                // A retry by the owner whose completion already landed succeeds again.
                Done already = completed.get(key, now);
                done = already != null && already.token == token;
                if (done && advance != null) {
                    watermarks.raise(advance);
                }
                return null;
            }
            if (!claim.rememberedAt(now)) {
                return null;
            }
            if (claim.token != token) {
                return claim;
            }
            if (advance != null) {
                watermarks.raise(advance);
            }
            if (retention > 0) {
                if (reply != null) {
                    replies.put(key, new KeptReply(token, reply));
                }
                completed.put(new Done(key, token, claim.attempts, claim.fingerprint, now + retention), now,
                        reply != null);
            }
            steps.remove(key);
            done = true;
            return null;
        }
    }

    /** What an owner's change makes of its live claim: the replacement, or {@code null} to drop it. */
    @FunctionalInterface
    private interface Change {
        Claim of(Claim claim, long now);
    }

    /**
     * A change only the claim's owner may make (release, renew, record a start), under the key's lock: a
     * claim past its remembered time is dropped, another owner's is left as it is.
     */
    private final class OwnerChange implements BiFunction<StoreKey, Claim, Claim> {
        private final long token;
        private final Change change;
        boolean done;
        Claim changed;

        OwnerChange(long token, Change change) {
            this.token = token;
            this.change = change;
        }

        @Override
        public Claim apply(StoreKey key, Claim claim) {
            long now = ticker.getAsLong();
            if (!claim.rememberedAt(now)) {
                return null;
            }
            if (claim.token != token) {
                return claim;
            }
            done = true;
            changed = change.of(claim, now);
            return changed;
        }
    }

    /** The key as a claim would see it, both tiers read under the key's lock. */
    private final class Inspect implements BiFunction<StoreKey, Claim, Claim> {
        StoredKey seen;

        @Override
        public Claim apply(StoreKey key, Claim claim) {
            long now = ticker.getAsLong();
            if (claim != null) {
                if (!claim.rememberedAt(now)) {
                    return null;
                }
                if (claim.leasedAt(now)) {
                    seen = new StoredKey(StoredKey.State.CLAIMED, claim.attempts, claim.fingerprint,
                            Instant.now().plusNanos(claim.leaseUntil - now), claim.starts);
                }
                return claim;
            }
            Done done = completed.get(key, now);
            if (done != null && done.liveAt(now)) {
                seen = new StoredKey(StoredKey.State.COMPLETED, done.attempts, done.fingerprint,
                        Instant.now().plusNanos(done.expiresAt - now));
            }
            return null;
        }
    }

    /** Removes the key from both tiers under its lock. */
    private final class Delete implements BiFunction<StoreKey, Claim, Claim> {
        boolean wasLive;

        @Override
        public Claim apply(StoreKey key, Claim claim) {
            long now = ticker.getAsLong();
            Done done = completed.remove(key);
            steps.remove(key);
            replies.remove(key);
            wasLive = claim != null ? claim.leasedAt(now) : done != null && done.liveAt(now);
            return null;
        }
    }

    /**
     * Removes the key's completion under its lock if it still qualifies for a purge; a claim, which a key with a
     * live completion cannot have, is left as it is.
     */
    private final class PurgeOne implements BiFunction<StoreKey, Claim, Claim> {
        private final long withinNanos;
        boolean deleted;

        PurgeOne(long withinNanos) {
            this.withinNanos = withinNanos;
        }

        @Override
        public Claim apply(StoreKey key, Claim claim) {
            Done done = completed.get(key);
            if (claim == null && done != null && qualifies(done, ticker.getAsLong(), withinNanos)) {
                deleted = completed.remove(key, done.token);
            }
            return claim;
        }
    }

    /** A completion's reply and the token of that completion. Immutable. */
    private record KeptReply(long token, StoredReply reply) {
    }

    /** Reads the reply of the key's live completion under its lock; a claimed key has none. */
    private final class ReplyRead implements BiFunction<StoreKey, Claim, Claim> {
        StoredReply read;

        @Override
        public Claim apply(StoreKey key, Claim claim) {
            if (claim != null) {
                return claim;
            }
            Done done = completed.get(key, ticker.getAsLong());
            KeptReply kept = replies.get(key);
            if (done != null && kept != null && kept.token == done.token) {
                read = kept.reply;
            }
            return null;
        }
    }

    /** One step's value and when it is forgotten (ticker time). Immutable. */
    private record KeptStep(byte[] value, long until) {
    }

    /** The steps of one key. Immutable: a record is a new instance, swapped in under the key's lock. */
    private record KeySteps(Map<String, KeptStep> byName) {

        KeySteps with(String name, KeptStep step, long now) {
            Map<String, KeptStep> next = new HashMap<>();
            byName.forEach((n, kept) -> {
                if (kept.until - now > 0) {
                    next.put(n, kept);
                }
            });
            next.put(name, step);
            return new KeySteps(Map.copyOf(next));
        }

        boolean expiredAt(long now) {
            for (KeptStep kept : byName.values()) {
                if (kept.until - now > 0) {
                    return false;
                }
            }
            return true;
        }
    }

    /** Reads the key's live steps under its lock, if the token owns its claim. */
    private final class StepsRead implements BiFunction<StoreKey, Claim, Claim> {
        private final long token;
        Map<String, byte[]> read;

        StepsRead(long token) {
            this.token = token;
        }

        @Override
        public Claim apply(StoreKey key, Claim claim) {
            long now = ticker.getAsLong();
            if (!claim.rememberedAt(now)) {
                return null;
            }
            if (claim.token != token) {
                return claim;
            }
            Map<String, byte[]> live = new HashMap<>();
            KeySteps kept = steps.get(key);
            if (kept != null) {
                kept.byName().forEach((name, step) -> {
                    if (step.until - now > 0) {
                        live.put(name, step.value.clone());
                    }
                });
            }
            read = live;
            return claim;
        }
    }

    /**
     * Records a step under the key's lock, if the token owns its claim: kept for the claim's retention after the
     * earlier of now and its lease end, when the claim would be forgotten had it ended now.
     */
    private final class StepRecord implements BiFunction<StoreKey, Claim, Claim> {
        private final long token;
        private final String name;
        private final byte[] value;
        boolean done;

        StepRecord(long token, String name, byte[] value) {
            this.token = token;
            this.name = name;
            this.value = value;
        }

        @Override
        public Claim apply(StoreKey key, Claim claim) {
            long now = ticker.getAsLong();
            if (!claim.rememberedAt(now)) {
                return null;
            }
            if (claim.token != token) {
                return claim;
            }
            long from = claim.leaseUntil - now > 0 ? now : claim.leaseUntil;
            KeptStep step = new KeptStep(value, from + claim.retention);
            steps.compute(key, (k, kept) -> kept == null ? new KeySteps(Map.of(name, step)) : kept.with(name, step, now));
            done = true;
            return claim;
        }
    }

    /**
     * Numbers the store's claims to pace the sweep (the fencing tokens, from {@link FencingTokens}, are random and
     * cannot count claims), without one shared counter on the hot path: each thread takes a block of numbers
     * from a single {@link AtomicLong} and counts through it alone, so threads claiming in parallel do not all
     * contend on one cache line. Numbers are unique within the store, from 1; they are not ordered across threads,
     * and nothing needs them to be. Blocks are as long as {@link CaffeineDedupStore#SWEEP_EVERY}, so each block
     * holds exactly one number that checks whether a sweep is due.
     */
    static final class ClaimNumbers {
        private static final long BLOCK = SWEEP_EVERY;

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
