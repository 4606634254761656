package dev.idem.testkit;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.locks.LockSupport;
import java.util.function.LongSupplier;

/**
 * The simplest store that can be right: one lock, one map. It proves the contract passable, and its
 * {@link Flaw}s prove the contract catches what it claims to catch. {@code completeAll} is one pass under
 * the lock; {@link #failWritesOf} makes the fenced writes of a key fail, for the partial-failure test.
 */
final class ReferenceDedupStore implements DedupStore {

    /** A deliberate bug, one at a time. */
    enum Flaw {
        NONE,
        /** complete, release and renew accept any token: no fencing. */
        IGNORES_TOKENS,
        /** keys are stored as {@code namespace + ":" + id}. */
        JOINS_KEY_PARTS,
        /** claims are forgotten when their lease ends, with their attempt count. */
        FORGETS_EXPIRED_CLAIMS,
        /** ids are compared case-insensitively, as some SQL collations do. */
        IGNORES_CASE,
        /** check-then-act without a lock, in claims and in recorded starts. */
        RACY,
        /** the token is the attempt number, so tokens repeat across keys. */
        REUSES_TOKENS,
        /** recordStart is the SPI's default: no starts are recorded. */
        RECORDS_NO_STARTS,
        /** a takeover starts the count of recorded starts afresh. */
        FORGETS_STARTS_ON_TAKEOVER,
        /** recordStart renews the owner's lease, as a write that sets the whole claim again might. */
        RENEWS_LEASE_ON_START,
        /** completeAll checks the token of a batch's first entry only, as if fencing were once per batch. */
        BATCH_IGNORES_TOKENS,
        /** completeAll answers in key order, as a store that sorts its batch and forgets to sort back. */
        BATCH_ANSWERS_IN_KEY_ORDER,
        /** completeAll keeps every key of a batch for the first entry's retention. */
        BATCH_USES_FIRST_RETENTION,
        /** completeAll reports every key of a batch failed when the write of one of them failed. */
        BATCH_FAILS_WHOLE,
    }

    private record State(long token, int attempts, String fingerprint, boolean completed,
            long leaseUntil, long lease, long claimRetention, long expiresAt, int starts) {
    }

    private final Map<Object, State> states = new ConcurrentHashMap<>();
    private final AtomicLong tokens = new AtomicLong();
    private final LongSupplier ticker;
    private final Flaw flaw;
    private final Set<StoreKey> failing = ConcurrentHashMap.newKeySet();

    ReferenceDedupStore(LongSupplier ticker, Flaw flaw) {
        this.ticker = ticker;
        this.flaw = flaw;
    }

    @Override
    public List<ClaimResult> claim(List<ClaimRequest> requests) {
        List<ClaimResult> results = new ArrayList<>(requests.size());
        Set<Long> acquiredHere = new HashSet<>();
        for (ClaimRequest request : requests) {
            if (flaw == Flaw.RACY) {
                results.add(claimOne(request, acquiredHere));
            } else {
                synchronized (this) {
                    results.add(claimOne(request, acquiredHere));
                }
            }
        }
        return results;
    }

    private ClaimResult claimOne(ClaimRequest request, Set<Long> acquiredHere) {
        long now = ticker.getAsLong();
        Object key = storageKey(request.key());
        State state = live(key, now);
        if (state != null && state.completed()) {
            return new ClaimResult.Duplicate(state.fingerprint() == null || request.fingerprint() == null
                    || state.fingerprint().equals(request.fingerprint()));
        }
        if (state != null && (state.leaseUntil() - now > 0 || acquiredHere.contains(state.token()))) {
            return new ClaimResult.InProgress(Duration.ofNanos(Math.max(1, state.leaseUntil() - now)));
        }
        int attempt = state == null ? 1 : state.attempts() + 1;
        int starts = state == null || flaw == Flaw.FORGETS_STARTS_ON_TAKEOVER ? 0 : state.starts();
        long token = flaw == Flaw.REUSES_TOKENS ? attempt : tokens.incrementAndGet();
        long lease = request.lease().toNanos();
        long leaseUntil = now + lease;
        long claimRetention = flaw == Flaw.FORGETS_EXPIRED_CLAIMS ? 0 : request.retention().toNanos();
        if (flaw == Flaw.RACY) {
            widenRace();
        }
        states.put(key, new State(token, attempt, request.fingerprint(), false, leaseUntil, lease, claimRetention,
                leaseUntil + claimRetention, starts));
        acquiredHere.add(token);
        return new ClaimResult.Acquired(token, attempt);
    }

    @Override
    public synchronized boolean complete(StoreKey key, long token, Duration retention) {
        return completeOne(key, token, retention, flaw == Flaw.IGNORES_TOKENS);
    }

    @Override
    public synchronized List<CompletionResult> completeAll(List<CompletionRequest> requests) {
        List<CompletionResult> results = new ArrayList<>(requests.size());
        StoreException failed = null;
        for (int i = 0; i < requests.size(); i++) {
            CompletionRequest request = requests.get(i);
            Duration retention = flaw == Flaw.BATCH_USES_FIRST_RETENTION ? requests.get(0).retention()
                    : request.retention();
            boolean anyToken = flaw == Flaw.IGNORES_TOKENS || flaw == Flaw.BATCH_IGNORES_TOKENS && i > 0;
            try {
                results.add(completeOne(request.key(), request.token(), retention, anyToken)
                        ? CompletionResult.COMPLETED : CompletionResult.NOT_OWNER);
            } catch (StoreException e) {
                failed = e;
                results.add(new CompletionResult.Failed(e));
            }
        }
        if (flaw == Flaw.BATCH_FAILS_WHOLE && failed != null) {
            CompletionResult whole = new CompletionResult.Failed(failed);
            results.replaceAll(ignored -> whole);
        }
        if (flaw == Flaw.BATCH_ANSWERS_IN_KEY_ORDER) {
            List<Integer> byKey = new ArrayList<>();
            for (int i = 0; i < requests.size(); i++) {
                byKey.add(i);
            }
            byKey.sort(Comparator.comparing(i -> requests.get(i).key().id()));
            return byKey.stream().map(results::get).toList();
        }
        return results;
    }

    private boolean completeOne(StoreKey key, long token, Duration retention, boolean anyToken) {
        failIfFailing(key);
        long now = ticker.getAsLong();
        State done = live(storageKey(key), now);
        if (done != null && done.completed()) {
            return anyToken || done.token() == token;
        }
        State state = owned(key, token, now, anyToken);
        if (state == null) {
            return false;
        }
        states.put(storageKey(key), new State(state.token(), state.attempts(), state.fingerprint(), true, 0, 0, 0,
                now + retention.toNanos(), state.starts()));
        return true;
    }

    /** From now on, complete, release, renew and recordStart of {@code key} fail; other keys are untouched. */
    void failWritesOf(StoreKey key) {
        failing.add(key);
    }

    private void failIfFailing(StoreKey key) {
        if (failing.contains(key)) {
            throw new StoreException("The reference store was told to fail writes of " + key, false);
        }
    }

    @Override
    public synchronized boolean release(StoreKey key, long token) {
        failIfFailing(key);
        if (owned(key, token, ticker.getAsLong()) == null) {
            return false;
        }
        states.remove(storageKey(key));
        return true;
    }

    @Override
    public synchronized boolean renew(StoreKey key, long token, Duration lease) {
        failIfFailing(key);
        long now = ticker.getAsLong();
        State state = owned(key, token, now);
        if (state == null) {
            return false;
        }
        long leaseUntil = now + lease.toNanos();
        states.put(storageKey(key), new State(state.token(), state.attempts(), state.fingerprint(), false,
                leaseUntil, lease.toNanos(), state.claimRetention(), leaseUntil + state.claimRetention(),
                state.starts()));
        return true;
    }

    @Override
    public int recordStart(StoreKey key, long token) {
        if (flaw == Flaw.RECORDS_NO_STARTS) {
            return DedupStore.super.recordStart(key, token);
        }
        if (flaw == Flaw.RACY) {
            return recordStartOnce(key, token);
        }
        synchronized (this) {
            return recordStartOnce(key, token);
        }
    }

    private int recordStartOnce(StoreKey key, long token) {
        failIfFailing(key);
        long now = ticker.getAsLong();
        State state = owned(key, token, now);
        if (state == null) {
            return 0;
        }
        int starts = state.starts() + 1;
        long leaseUntil = flaw == Flaw.RENEWS_LEASE_ON_START ? now + state.lease() : state.leaseUntil();
        if (flaw == Flaw.RACY) {
            widenRace();
        }
        states.put(storageKey(key), new State(state.token(), state.attempts(), state.fingerprint(), false,
                leaseUntil, state.lease(), state.claimRetention(), leaseUntil + state.claimRetention(), starts));
        return starts;
    }

    /**
     * RACY: a millisecond between the check and the act, so callers that check the same key at about the same
     * time both act on what they saw, however a loaded machine schedules them; a {@code yield} left it to luck.
     */
    private static void widenRace() {
        LockSupport.parkNanos(TimeUnit.MILLISECONDS.toNanos(1));
    }

    @Override
    public void close() {
        states.clear();
    }

    private State owned(StoreKey key, long token, long now) {
        return owned(key, token, now, flaw == Flaw.IGNORES_TOKENS);
    }

    private State owned(StoreKey key, long token, long now, boolean anyToken) {
        State state = live(storageKey(key), now);
        if (state == null || state.completed() || (state.token() != token && !anyToken)) {
            return null;
        }
        return state;
    }

    private State live(Object key, long now) {
        State state = states.get(key);
        return state == null || state.expiresAt() - now <= 0 ? null : state;
    }

    private Object storageKey(StoreKey key) {
        switch (flaw) {
            case JOINS_KEY_PARTS:
                return key.namespace() + ":" + key.id();
            case IGNORES_CASE:
                return new StoreKey(key.namespace(), key.id().toLowerCase(Locale.ROOT));
            default:
                return key;
        }
    }
}
