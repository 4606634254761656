package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreKey;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.Random;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The contract every {@link DedupStore} must pass: the key life cycle of docs/design.md ("A key's life
 * in the store") as JUnit 5 tests. A store's test extends it and says how to make a store:
 *
 * <pre>{@code
 * class CaffeineDedupStoreTest extends DedupStoreContract {
 *     private final DedupStoreProvider provider = new CaffeineDedupStoreProvider();
 *
 *     @Override
 *     protected DedupStore createStore(ManualTicker ticker) {
 *         return provider.create(TestPluginConfig.defaults("store.caffeine", provider.configSpec()),
 *                 new StoreContext(ticker));
 *     }
 * }
 * }</pre>
 *
 * <h2>What it checks</h2>
 * Claims (fresh, duplicate, in progress, takeover with attempt counts), fencing tokens
 * ({@code complete}, {@code release} and {@code renew} only for the current owner), lease and
 * retention expiry to the nanosecond of the store's clock, payload fingerprints, batches (repeated
 * keys, request order), namespaces, keys holding any text, and 32 threads racing on the same keys.
 * Recorded starts ({@code recordStart}): counted from 1 per key, only for the current owner, kept across
 * takeovers, forgotten with the key, distinct under racing threads, and changing neither the lease nor
 * the attempts that claims report. Every store must record them: one that answers
 * {@link DedupStore#STARTS_NOT_RECORDED} (the SPI's default) fails those tests, since the runtime would
 * then blame the keys that were merely in flight beside a crash.
 * Batched completions ({@code completeAll}): every entry answered as {@code complete} would answer it on its
 * own (fenced by its own token, so stale and current tokens mix in one batch; idempotent for its owner; kept
 * for its own retention; recorded starts as {@code complete} leaves them), in request order, with keys
 * repeated, across namespaces, in a batch of 1,000 keys and from racing threads; and a key whose write failed
 * is reported alone, where the store can be made to fail one key ({@link #failWritesOf}).
 * Every call a test makes is recorded; after each test the suite also checks, across all of them:
 * no fencing token was handed out twice, every token the store accepted was one it had handed out
 * for that key, no key was acquired twice without a release or a passage of time in between,
 * attempts start at 1, and every {@code retryAfter} is positive and no longer than a lease asked for.
 *
 * <h2>Time</h2>
 * No test sleeps. A test moves time with {@link #advance(Duration)}, which calls
 * {@link #advanceStoreClock(Duration)}. By default that advances the {@link ManualTicker} handed to
 * {@link #createStore}, which is all a store that keeps time in-process (through
 * {@code StoreContext.nanoTicker()}) needs. A store that uses its server's clock (Redis {@code PX},
 * SQL {@code now()}) ignores the ticker and overrides {@link #advanceStoreClock(Duration)} to make
 * {@code duration} pass for every key of the test as seen by the store: move each stored deadline
 * back by {@code duration} ({@code UPDATE ... SET lease_until = lease_until - ?}, or lower each
 * Redis key's deadline and its {@code PTTL}). Every key a test uses has a namespace starting with
 * {@link #namespace()}, so such an override can stay within the test's keys on a shared server.
 * Such a store also overrides {@link #clockResolution()}: the real time a few calls take then
 * passes on the server clock too, and the tests that probe "just before expiry" stay that much
 * before it.
 *
 * <h2>Isolation and life cycle</h2>
 * Each test gets a new store from {@link #createStore}, a new ticker and a namespace of its own
 * (so tests on a shared server do not see each other's keys), and the store is closed after the
 * test, whether it passed or not. Durations used: leases of {@link #LEASE}, claims remembered for
 * {@link #CLAIM_RETENTION} after their lease, completed keys kept for {@link #RETENTION}.
 *
 * <p>Subclasses may add their own tests and use {@link #store()}, {@link #key(String)} and
 * {@link #advance(Duration)}; calls through {@link #store()} take part in the invariant checks.
 */
public abstract class DedupStoreContract {

    /** The lease every claim of the suite asks for. */
    protected static final Duration LEASE = Duration.ofSeconds(30);

    /** How long a claim whose lease ran out is remembered for its attempt count. */
    protected static final Duration CLAIM_RETENTION = Duration.ofMinutes(5);

    /** How long a completed key is remembered. */
    protected static final Duration RETENTION = Duration.ofHours(1);

    private static final int RACING_THREADS = 32;
    private static final int RACED_KEYS = 1_000;
    private static final int STARTS_PER_THREAD = 8;

    private ManualTicker ticker;
    private DedupStore created;
    private RecordingStore store;
    private String namespace;

    /**
     * Makes the store under test; called before each test. A store with an in-process clock reads
     * time from {@code ticker} (pass it as {@code new StoreContext(ticker)}); a store with a server
     * clock ignores it and overrides {@link #advanceStoreClock(Duration)}.
     */
    protected abstract DedupStore createStore(ManualTicker ticker);

    /**
     * Makes {@code duration} pass on the store's clock. Default: advances the ticker given to
     * {@link #createStore}. Stores with a server clock override it without sleeping; see the class
     * documentation. Tests call {@link #advance(Duration)}, not this.
     */
    protected void advanceStoreClock(Duration duration) {
        ticker.advance(duration);
    }

    /**
     * The smallest step of time the store tells apart: the "just before expiry" tests stop this much
     * before a deadline. Default 1ns, for a store on the {@link ManualTicker}. A store with a
     * millisecond clock returns at least 1ms; one with a server clock adds the time a few of its
     * calls take.
     */
    protected Duration clockResolution() {
        return Duration.ofNanos(1);
    }

    /**
     * Makes the store's writes of {@code key} fail from now on while its writes of other keys keep landing, if
     * the store can be made to, and answers whether it did. The partial-failure test of {@code completeAll}
     * breaks one key of a batch this way and expects that key alone to be answered
     * {@link CompletionResult.Failed}. A store whose writes of a key can fail one by one overrides it (Redis:
     * the key holds a value another application wrote); the test touches the key no more afterwards. Default:
     * {@code false}, for a store that cannot fail one key of a batch alone (one in-memory pass, or one SQL
     * statement that lands whole or not at all); the test then checks that the batch completes whole.
     */
    protected boolean failWritesOf(StoreKey key) {
        return false;
    }

    /** Makes {@code duration} pass for the store, through {@link #advanceStoreClock(Duration)}. */
    protected final void advance(Duration duration) {
        store.newEpoch();
        advanceStoreClock(duration);
    }

    /** The store under test, recording calls for the invariant checks. */
    protected final DedupStore store() {
        return store;
    }

    /** The ticker handed to {@link #createStore} for the current test. */
    protected final ManualTicker ticker() {
        return ticker;
    }

    /** This test's namespace; every key the suite uses has a namespace starting with it. */
    protected final String namespace() {
        return namespace;
    }

    /** A key with {@code id} in this test's namespace. */
    protected final StoreKey key(String id) {
        return new StoreKey(namespace, id);
    }

    @BeforeEach
    protected final void createStoreForTest(TestInfo test) {
        String method = test.getTestMethod().map(m -> m.getName()).orElse("test");
        if (method.length() > 40) {
            method = method.substring(0, 40);
        }
        namespace = "contract-" + method + "-" + UUID.randomUUID().toString().substring(0, 8);
        ticker = new ManualTicker();
        created = createStore(ticker);
        assertThat(created).as("createStore(ticker)").isNotNull();
        store = new RecordingStore(created);
    }

    @AfterEach
    protected final void checkInvariantsAndCloseStore() {
        if (created == null) {
            return;
        }
        try {
            assertThat(store.invariantViolations()).as("store invariants over every call of this test").isEmpty();
        } finally {
            created.close();
            created = null;
        }
    }

    // ---------------------------------------------------------------- claim

    @Test
    void claimOfFreshKeyIsAcquiredWithAttemptOne() {
        Acquired acquired = acquire(key("order-1"));

        assertThat(acquired.attempt()).isEqualTo(1);
    }

    @Test
    void claimAfterCompleteIsDuplicate() {
        StoreKey key = key("order-1");
        Acquired acquired = acquire(key);

        assertThat(store.complete(key, acquired.token(), RETENTION)).isTrue();

        assertThat(claim(key)).isEqualTo(new Duplicate(true));
        assertThat(claim(key)).as("a duplicate claim changes nothing").isEqualTo(new Duplicate(true));
    }

    @Test
    void claimWhileLeasedIsInProgressWithRetryAfterWithinLease() {
        StoreKey key = key("order-1");
        acquire(key);

        assertInProgressEndingWithin(claim(key), LEASE);

        Duration elapsed = LEASE.dividedBy(3);
        advance(elapsed);
        assertInProgressEndingWithin(claim(key), LEASE.minus(elapsed));
    }

    @Test
    void claimJustBeforeLeaseEndsIsStillInProgress() {
        StoreKey key = key("order-1");
        acquire(key);

        advance(LEASE.minus(clockResolution()));

        assertInProgressEndingWithin(claim(key), clockResolution());
    }

    @Test
    void claimAfterLeaseEndsTakesOverWithNextAttemptAndNewToken() {
        StoreKey key = key("order-1");
        Acquired first = acquire(key);

        advance(LEASE);
        Acquired second = acquire(key);
        advance(LEASE);
        Acquired third = acquire(key);

        assertThat(second.attempt()).isEqualTo(2);
        assertThat(third.attempt()).isEqualTo(3);
        assertThat(Set.of(first.token(), second.token(), third.token())).hasSize(3);
    }

    @Test
    void expiredClaimIsRememberedForItsAttemptsUntilLeaseEndPlusRetention() {
        StoreKey key = key("order-1");
        acquire(key);

        advance(LEASE.plus(CLAIM_RETENTION).minus(clockResolution()));
        assertThat(acquire(key).attempt()).as("taken over while still remembered").isEqualTo(2);

        advance(LEASE.plus(CLAIM_RETENTION));
        assertThat(acquire(key).attempt()).as("forgotten, so fresh").isEqualTo(1);
    }

    @Test
    void completedKeyIsForgottenOnceRetentionRunsOut() {
        StoreKey key = key("order-1");
        Acquired acquired = acquire(key);
        assertThat(store.complete(key, acquired.token(), RETENTION)).isTrue();

        advance(RETENTION.minus(clockResolution()));
        assertThat(claim(key)).isEqualTo(new Duplicate(true));

        advance(clockResolution());
        assertThat(acquire(key).attempt()).isEqualTo(1);
    }

    // ---------------------------------------------------------------- fencing

    @Test
    void staleOwnerCannotCompleteReleaseOrRenewAfterTakeover() {
        StoreKey key = key("order-1");
        Acquired stale = acquire(key);
        advance(LEASE);
        Acquired owner = acquire(key);

        assertThat(store.complete(key, stale.token(), RETENTION)).as("stale complete").isFalse();
        assertThat(store.release(key, stale.token())).as("stale release").isFalse();
        assertThat(store.renew(key, stale.token(), LEASE)).as("stale renew").isFalse();

        assertInProgressEndingWithin(claim(key), LEASE);
        assertThat(store.complete(key, owner.token(), RETENTION)).as("owner's complete").isTrue();
        assertThat(claim(key)).isEqualTo(new Duplicate(true));
    }

    @Test
    void ownerWhoseLeaseRanOutKeepsTheKeyUntilTakenOver() {
        StoreKey renewed = key("renewed");
        StoreKey completed = key("completed");
        Acquired renewer = acquire(renewed);
        Acquired completer = acquire(completed);

        advance(LEASE);

        assertThat(store.renew(renewed, renewer.token(), LEASE)).isTrue();
        assertInProgressEndingWithin(claim(renewed), LEASE);
        assertThat(store.complete(completed, completer.token(), RETENTION)).isTrue();
        assertThat(claim(completed)).isEqualTo(new Duplicate(true));
    }

    @Test
    void completeReleaseAndRenewWithAnotherTokenAreRejected() {
        StoreKey key = key("order-1");
        Acquired acquired = acquire(key);
        long other = acquired.token() + 1;

        assertThat(store.complete(key, other, RETENTION)).isFalse();
        assertThat(store.release(key, other)).isFalse();
        assertThat(store.renew(key, other, LEASE)).isFalse();

        assertInProgressEndingWithin(claim(key), LEASE);
        assertThat(store.complete(key, acquired.token(), RETENTION)).isTrue();
    }

    @Test
    void completeReleaseAndRenewOfAbsentKeyAreRejected() {
        StoreKey key = key("never-claimed");

        assertThat(store.complete(key, 1, RETENTION)).isFalse();
        assertThat(store.release(key, 1)).isFalse();
        assertThat(store.renew(key, 1, LEASE)).isFalse();

        assertThat(acquire(key).attempt()).as("nothing was left behind").isEqualTo(1);
    }

    @Test
    void releaseAndRenewAfterCompleteAreRejected() {
        StoreKey key = key("order-1");
        Acquired acquired = acquire(key);
        assertThat(store.complete(key, acquired.token(), RETENTION)).isTrue();

        assertThat(store.release(key, acquired.token())).as("release after complete").isFalse();
        assertThat(store.renew(key, acquired.token(), LEASE)).as("renew after complete").isFalse();

        assertThat(claim(key)).isEqualTo(new Duplicate(true));
    }

    @Test
    void completeIsIdempotentForTheTokenThatCompletedTheKey() {
        StoreKey key = key("order-1");
        Acquired acquired = acquire(key);
        assertThat(store.complete(key, acquired.token(), RETENTION)).isTrue();

        assertThat(store.complete(key, acquired.token(), RETENTION)).as("a retried complete").isTrue();
        assertThat(store.complete(key, acquired.token() + 1, RETENTION)).as("another token").isFalse();
        assertThat(claim(key)).isEqualTo(new Duplicate(true));
    }

    // ---------------------------------------------------------------- release and renew

    @Test
    void releasedKeyIsAcquiredAgainAtOnceWithAttemptOne() {
        StoreKey key = key("order-1");
        Acquired first = acquire(key);

        assertThat(store.release(key, first.token())).isTrue();
        Acquired second = acquire(key);

        assertThat(second.attempt()).isEqualTo(1);
        assertThat(second.token()).isNotEqualTo(first.token());
        assertThat(store.complete(key, first.token(), RETENTION)).as("the released token is dead").isFalse();
    }

    @Test
    void renewExtendsLeaseBeyondItsOriginalEnd() {
        StoreKey key = key("order-1");
        Acquired acquired = acquire(key);
        Duration half = LEASE.dividedBy(2);

        advance(half);
        assertThat(store.renew(key, acquired.token(), LEASE)).isTrue();
        advance(half.plus(clockResolution()));

        assertInProgressEndingWithin(claim(key), half);

        advance(half.minus(clockResolution()));
        Acquired takeover = acquire(key);
        assertThat(takeover.attempt()).as("the renewed lease ended").isEqualTo(2);
    }

    // ---------------------------------------------------------------- recorded starts

    @Test
    void recordStartOfClaimedKeyCountsStartsFromOne() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);

        assertThat(recordStart(key, owner.token())).as("the first start").isEqualTo(1);
        assertThat(recordStart(key, owner.token())).as("the second start").isEqualTo(2);
        assertThat(store.complete(key, owner.token(), RETENTION)).as("the owner's complete").isTrue();
    }

    @Test
    void recordStartWithAnotherTokenIsRejectedAndRecordsNothing() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);

        assertThat(recordStart(key, owner.token() + 1)).as("a start with another token").isZero();
        assertThat(recordStart(key, owner.token())).as("the owner's first start").isEqualTo(1);
        assertThat(recordStart(key, owner.token() - 1)).as("a start with another token").isZero();
        assertThat(recordStart(key, owner.token())).as("the owner's second start").isEqualTo(2);
    }

    @Test
    void recordStartByStaleOwnerAfterTakeoverIsRejectedAndRecordsNothing() {
        StoreKey key = key("order-1");
        Acquired stale = acquire(key);
        assertThat(recordStart(key, stale.token())).isEqualTo(1);
        advance(LEASE);
        Acquired owner = acquire(key);

        assertThat(recordStart(key, stale.token())).as("the stale owner's start").isZero();
        assertThat(recordStart(key, owner.token())).as("the new owner's start").isEqualTo(2);
    }

    @Test
    void recordedStartsSurviveTakeoverAfterLeaseRanOut() {
        StoreKey key = key("order-1");
        Acquired first = acquire(key);
        assertThat(recordStart(key, first.token())).isEqualTo(1);

        advance(LEASE);
        Acquired second = acquire(key);

        assertThat(second.attempt()).isEqualTo(2);
        assertThat(recordStart(key, second.token())).as("the first start after the takeover").isEqualTo(2);
    }

    @Test
    void recordedStartsSurviveSeveralTakeoversAndCountOnlyRecordedStarts() {
        // Starts and attempts are counted apart: an owner may die before recording a start (then the takeover
        // adds an attempt and no start), and one owner may record several.
        StoreKey key = key("order-1");
        acquire(key);

        advance(LEASE);
        Acquired second = acquire(key);
        assertThat(second.attempt()).isEqualTo(2);
        assertThat(recordStart(key, second.token())).as("attempt 2's start").isEqualTo(1);

        advance(LEASE);
        assertThat(acquire(key).attempt()).as("a takeover whose owner records no start").isEqualTo(3);

        advance(LEASE);
        Acquired fourth = acquire(key);
        assertThat(fourth.attempt()).isEqualTo(4);
        assertThat(recordStart(key, fourth.token())).as("attempt 4's first start").isEqualTo(2);
        assertThat(recordStart(key, fourth.token())).as("attempt 4's second start").isEqualTo(3);

        advance(LEASE);
        Acquired fifth = acquire(key);
        assertThat(fifth.attempt()).isEqualTo(5);
        assertThat(recordStart(key, fifth.token())).as("attempt 5's start").isEqualTo(4);
        assertThat(store.complete(key, fifth.token(), RETENTION)).isTrue();
    }

    @Test
    void renewKeepsRecordedStarts() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(recordStart(key, owner.token())).isEqualTo(1);

        assertThat(store.renew(key, owner.token(), LEASE)).isTrue();

        assertThat(recordStart(key, owner.token())).as("the start after the renewal").isEqualTo(2);
    }

    @Test
    void releaseForgetsRecordedStarts() {
        StoreKey key = key("order-1");
        acquire(key);
        advance(LEASE);
        Acquired released = acquire(key);
        assertThat(recordStart(key, released.token())).isEqualTo(1);
        assertThat(recordStart(key, released.token())).isEqualTo(2);

        assertThat(store.release(key, released.token())).isTrue();
        Acquired fresh = acquire(key);

        assertThat(fresh.attempt()).isEqualTo(1);
        assertThat(recordStart(key, released.token())).as("the released owner's start").isZero();
        assertThat(recordStart(key, fresh.token())).as("the first start after the release").isEqualTo(1);
    }

    @Test
    void recordedStartsAreForgottenWithAnAbandonedClaimOnceItsRetentionRunsOut() {
        StoreKey key = key("order-1");
        Acquired abandoned = acquire(key);
        assertThat(recordStart(key, abandoned.token())).isEqualTo(1);

        advance(LEASE.plus(CLAIM_RETENTION));
        Acquired fresh = acquire(key);

        assertThat(fresh.attempt()).as("forgotten, so fresh").isEqualTo(1);
        assertThat(recordStart(key, fresh.token())).as("the first start of the fresh claim").isEqualTo(1);
    }

    @Test
    void recordStartOfCompletedKeyIsRejected() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(recordStart(key, owner.token())).isEqualTo(1);
        assertThat(store.complete(key, owner.token(), RETENTION)).isTrue();

        assertThat(recordStart(key, owner.token())).as("a start of the completed key").isZero();
        assertThat(claim(key)).isEqualTo(new Duplicate(true));
        assertThat(store.complete(key, owner.token(), RETENTION)).as("a retried complete").isTrue();
    }

    @Test
    void recordStartOfAbsentKeyIsRejectedAndLeavesNothingBehind() {
        StoreKey key = key("never-claimed");

        assertThat(recordStart(key, 1)).isZero();

        Acquired owner = acquire(key);
        assertThat(owner.attempt()).as("nothing was left behind").isEqualTo(1);
        assertThat(recordStart(key, owner.token())).isEqualTo(1);
    }

    @Test
    void recordStartNeitherRenewsTheLeaseNorCountsAnAttempt() {
        StoreKey key = key("order-1");
        acquire(key);
        advance(LEASE);
        Acquired owner = acquire(key);
        Duration half = LEASE.dividedBy(2);

        advance(half);
        assertThat(recordStart(key, owner.token())).isEqualTo(1);
        assertThat(recordStart(key, owner.token())).isEqualTo(2);

        assertInProgressEndingWithin(claim(key), half);
        advance(half);
        Acquired next = acquire(key);
        assertThat(next.attempt()).as("the lease ended when it would have; attempts count claims, not starts")
                .isEqualTo(3);
        assertThat(recordStart(key, next.token())).isEqualTo(3);
    }

    @Test
    void recordedStartsAreKeptPerKeyAndNamespace() {
        StoreKey key = key("order-1");
        StoreKey otherId = key("order-2");
        StoreKey otherNamespace = new StoreKey(namespace + "-other", "order-1");
        Acquired owner = acquire(key);
        Acquired otherIdOwner = acquire(otherId);
        Acquired otherNamespaceOwner = acquire(otherNamespace);

        assertThat(recordStart(key, owner.token())).isEqualTo(1);
        assertThat(recordStart(key, owner.token())).isEqualTo(2);
        assertThat(recordStart(key, owner.token())).isEqualTo(3);

        assertThat(recordStart(otherId, otherIdOwner.token())).as("another id's first start").isEqualTo(1);
        assertThat(recordStart(otherNamespace, otherNamespaceOwner.token())).as("another namespace's first start")
                .isEqualTo(1);
        assertThat(recordStart(otherId, owner.token())).as("a start of another key with this key's token").isZero();
        assertThat(recordStart(key, owner.token())).isEqualTo(4);
    }

    // ---------------------------------------------------------------- fingerprints

    @Test
    void duplicateWithSameFingerprintMatches() {
        StoreKey key = key("order-1");
        completeWithFingerprint(key, "sha256:aa");

        assertThat(claim(request(key, "sha256:aa"))).isEqualTo(new Duplicate(true));
    }

    @Test
    void duplicateWithOtherFingerprintDoesNotMatch() {
        StoreKey key = key("order-1");
        completeWithFingerprint(key, "sha256:aa");

        assertThat(claim(request(key, "sha256:bb"))).isEqualTo(new Duplicate(false));
    }

    @Test
    void duplicateWithoutFingerprintOnEitherSideMatches() {
        StoreKey storedWithout = key("stored-without");
        StoreKey askedWithout = key("asked-without");
        StoreKey neither = key("neither");
        completeWithFingerprint(storedWithout, null);
        completeWithFingerprint(askedWithout, "sha256:aa");
        completeWithFingerprint(neither, null);

        assertThat(claim(request(storedWithout, "sha256:aa"))).isEqualTo(new Duplicate(true));
        assertThat(claim(request(askedWithout, null))).isEqualTo(new Duplicate(true));
        assertThat(claim(request(neither, null))).isEqualTo(new Duplicate(true));
    }

    @Test
    void takeoverKeepsTheNewOwnersFingerprint() {
        StoreKey key = key("order-1");
        acquire(request(key, "sha256:aa"));
        advance(LEASE);
        Acquired owner = acquire(request(key, "sha256:bb"));
        assertThat(store.complete(key, owner.token(), RETENTION)).isTrue();

        assertThat(claim(request(key, "sha256:bb"))).isEqualTo(new Duplicate(true));
        assertThat(claim(request(key, "sha256:aa"))).isEqualTo(new Duplicate(false));
    }

    // ---------------------------------------------------------------- batches

    @Test
    void batchThatRepeatsKeyAcquiresItOnce() {
        StoreKey key = key("order-1");

        List<ClaimResult> results = store.claim(List.of(request(key), request(key), request(key)));

        assertThat(results).hasSize(3);
        assertThat(results.get(0)).isInstanceOf(Acquired.class);
        assertInProgressEndingWithin(results.get(1), LEASE);
        assertInProgressEndingWithin(results.get(2), LEASE);
    }

    @Test
    void batchThatRepeatsExpiredKeyTakesItOverOnce() {
        StoreKey key = key("order-1");
        acquire(key);
        advance(LEASE);

        List<ClaimResult> results = store.claim(List.of(request(key), request(key)));

        assertThat(results).hasSize(2);
        assertThat(results.get(0)).isInstanceOfSatisfying(Acquired.class, a -> assertThat(a.attempt()).isEqualTo(2));
        assertInProgressEndingWithin(results.get(1), LEASE);
    }

    @Test
    void batchResultsComeBackInRequestOrder() {
        StoreKey done = key("done");
        StoreKey busy = key("busy");
        completeWithFingerprint(done, "sha256:aa");
        acquire(busy);

        List<ClaimResult> results = store.claim(List.of(
                request(key("fresh-1")),
                request(done, "sha256:aa"),
                request(busy),
                request(key("fresh-2")),
                request(done, "sha256:bb"),
                request(key("fresh-3"))));

        assertThat(results).hasSize(6);
        assertThat(results.get(0)).isInstanceOf(Acquired.class);
        assertThat(results.get(1)).isEqualTo(new Duplicate(true));
        assertInProgressEndingWithin(results.get(2), LEASE);
        assertThat(results.get(3)).isInstanceOf(Acquired.class);
        assertThat(results.get(4)).isEqualTo(new Duplicate(false));
        assertThat(results.get(5)).isInstanceOf(Acquired.class);
    }

    @Test
    void emptyBatchGivesNoResults() {
        assertThat(store.claim(List.of())).isEmpty();
    }

    // ---------------------------------------------------------------- batched completion

    @Test
    void completeAllOfEmptyBatchGivesNoResults() {
        assertThat(store.completeAll(List.of())).isEmpty();
    }

    @Test
    void completeAllCompletesEveryKeyWhoseTokenIsCurrent() {
        List<StoreKey> keys = List.of(key("order-1"), key("order-2"), key("order-3"));
        List<Acquired> owners = acquireAll(keys);

        List<CompletionResult> results = completeAll(completions(keys, owners));

        assertThat(results).containsExactly(CompletionResult.COMPLETED, CompletionResult.COMPLETED,
                CompletionResult.COMPLETED);
        for (int i = 0; i < keys.size(); i++) {
            assertThat(claim(keys.get(i))).as("claim of %s", keys.get(i)).isEqualTo(new Duplicate(true));
            assertThat(store.complete(keys.get(i), owners.get(i).token(), RETENTION))
                    .as("complete of %s after its batch", keys.get(i)).isTrue();
        }
    }

    @Test
    void completeAllRemembersEachKeyForItsOwnRetention() {
        StoreKey shortKept = key("short");
        StoreKey longKept = key("long");
        Acquired shortOwner = acquire(shortKept);
        Acquired longOwner = acquire(longKept);

        assertThat(completeAll(List.of(
                new CompletionRequest(shortKept, shortOwner.token(), RETENTION),
                new CompletionRequest(longKept, longOwner.token(), RETENTION.multipliedBy(2)))))
                .containsExactly(CompletionResult.COMPLETED, CompletionResult.COMPLETED);

        advance(RETENTION.minus(clockResolution()));
        assertThat(claim(shortKept)).isEqualTo(new Duplicate(true));
        assertThat(claim(longKept)).isEqualTo(new Duplicate(true));

        advance(clockResolution());
        assertThat(acquire(shortKept).attempt()).as("the shorter retention ran out").isEqualTo(1);
        assertThat(claim(longKept)).as("the longer retention still runs").isEqualTo(new Duplicate(true));

        advance(RETENTION);
        assertThat(acquire(longKept).attempt()).as("the longer retention ran out").isEqualTo(1);
    }

    @Test
    void completeAllWithZeroRetentionCompletesAndForgetsAtOnce() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);

        assertThat(completeAll(List.of(new CompletionRequest(key, owner.token(), Duration.ZERO))))
                .containsExactly(CompletionResult.COMPLETED);

        assertThat(acquire(key).attempt()).as("forgotten at once, so fresh").isEqualTo(1);
    }

    @Test
    void completeAllFencesEachKeyByItsOwnToken() {
        StoreKey takenOver = key("taken-over");
        StoreKey leaseRanOut = key("lease-ran-out");
        StoreKey current = key("current");
        StoreKey otherToken = key("other-token");
        StoreKey absent = key("never-claimed");
        Acquired stale = acquire(takenOver);
        Acquired late = acquire(leaseRanOut);
        advance(LEASE);
        Acquired newOwner = acquire(takenOver);
        Acquired owner = acquire(current);
        Acquired otherOwner = acquire(otherToken);

        List<CompletionResult> results = completeAll(List.of(
                completion(takenOver, stale),
                completion(current, owner),
                new CompletionRequest(otherToken, otherOwner.token() + 1, RETENTION),
                completion(leaseRanOut, late),
                new CompletionRequest(absent, 1, RETENTION)));

        assertThat(results).containsExactly(CompletionResult.NOT_OWNER, CompletionResult.COMPLETED,
                CompletionResult.NOT_OWNER, CompletionResult.COMPLETED, CompletionResult.NOT_OWNER);
        assertInProgressEndingWithin(claim(takenOver), LEASE);
        assertInProgressEndingWithin(claim(otherToken), LEASE);
        assertThat(claim(current)).isEqualTo(new Duplicate(true));
        assertThat(claim(leaseRanOut)).as("its owner completed it while nobody had taken it over")
                .isEqualTo(new Duplicate(true));
        assertThat(store.complete(takenOver, newOwner.token(), RETENTION)).as("the new owner's complete").isTrue();
        assertThat(store.complete(otherToken, otherOwner.token(), RETENTION)).as("the owner's complete").isTrue();
        assertThat(acquire(absent).attempt()).as("nothing was left behind").isEqualTo(1);
    }

    @Test
    void completeAllIsIdempotentForTheTokenThatCompletedTheKey() {
        StoreKey byComplete = key("by-complete");
        StoreKey byBatch = key("by-batch");
        Acquired first = acquire(byComplete);
        Acquired second = acquire(byBatch);
        assertThat(store.complete(byComplete, first.token(), RETENTION)).isTrue();
        assertThat(completeAll(List.of(completion(byBatch, second)))).containsExactly(CompletionResult.COMPLETED);

        List<CompletionResult> results = completeAll(List.of(
                completion(byComplete, first),
                new CompletionRequest(byComplete, first.token() + 1, RETENTION),
                completion(byBatch, second),
                new CompletionRequest(byBatch, second.token() + 1, RETENTION)));

        assertThat(results).as("retried completions, then another token's").containsExactly(
                CompletionResult.COMPLETED, CompletionResult.NOT_OWNER, CompletionResult.COMPLETED,
                CompletionResult.NOT_OWNER);
        assertThat(store.complete(byBatch, second.token(), RETENTION)).as("a retried complete").isTrue();
        assertThat(claim(byComplete)).isEqualTo(new Duplicate(true));
        assertThat(claim(byBatch)).isEqualTo(new Duplicate(true));
    }

    @Test
    void completeAllOfReleasedKeyIsNotOwnerAndLeavesItFree() {
        StoreKey key = key("order-1");
        Acquired released = acquire(key);
        assertThat(store.release(key, released.token())).isTrue();

        assertThat(completeAll(List.of(completion(key, released)))).containsExactly(CompletionResult.NOT_OWNER);

        Acquired fresh = acquire(key);
        assertThat(fresh.attempt()).isEqualTo(1);
        assertThat(completeAll(List.of(completion(key, released), completion(key, fresh))))
                .containsExactly(CompletionResult.NOT_OWNER, CompletionResult.COMPLETED);
    }

    @Test
    void completeAllOfKeyRepeatedInTheBatchAnswersEveryRepeat() {
        StoreKey key = key("order-1");
        StoreKey takenOver = key("taken-over");
        Acquired stale = acquire(takenOver);
        advance(LEASE);
        Acquired newOwner = acquire(takenOver);
        Acquired owner = acquire(key);

        List<CompletionResult> results = completeAll(List.of(
                completion(key, owner),
                completion(takenOver, stale),
                completion(key, owner),
                completion(takenOver, newOwner),
                completion(takenOver, stale),
                completion(takenOver, newOwner)));

        assertThat(results).containsExactly(CompletionResult.COMPLETED, CompletionResult.NOT_OWNER,
                CompletionResult.COMPLETED, CompletionResult.COMPLETED, CompletionResult.NOT_OWNER,
                CompletionResult.COMPLETED);
        assertThat(claim(key)).isEqualTo(new Duplicate(true));
        assertThat(claim(takenOver)).isEqualTo(new Duplicate(true));
    }

    @Test
    void completeAllAnswersInRequestOrder() {
        // Request order is neither claim order nor key order, and neighbours' answers differ.
        List<StoreKey> keys = new ArrayList<>();
        for (int i = 0; i < 24; i++) {
            keys.add(key("order-" + i));
        }
        List<Acquired> owners = acquireAll(keys);
        List<CompletionResult> expected = new ArrayList<>();
        for (int i = 0; i < keys.size(); i++) {
            boolean released = i % 3 == 1;
            if (released) {
                assertThat(store.release(keys.get(i), owners.get(i).token())).isTrue();
            }
            expected.add(released ? CompletionResult.NOT_OWNER : CompletionResult.COMPLETED);
        }
        List<Integer> order = new ArrayList<>(IntStream.range(0, keys.size()).boxed().toList());
        Collections.shuffle(order, new Random(42));

        List<CompletionResult> results = completeAll(order.stream()
                .map(i -> completion(keys.get(i), owners.get(i))).toList());

        assertThat(results).containsExactlyElementsOf(order.stream().map(expected::get).toList());
    }

    @Test
    void completeAllSpansNamespacesAndKeepsEachTokenToItsOwnKey() {
        StoreKey inA = new StoreKey(namespace + "-a", "order-1");
        StoreKey inB = new StoreKey(namespace + "-b", "order-1");
        StoreKey inC = new StoreKey(namespace + "-c", "order-1");
        Acquired a = acquire(inA);
        acquire(inB);
        Acquired c = acquire(inC);

        List<CompletionResult> results = completeAll(List.of(completion(inA, a),
                new CompletionRequest(inB, a.token(), RETENTION), completion(inC, c)));

        assertThat(results).as("the same id in three namespaces; B's entry carries A's token")
                .containsExactly(CompletionResult.COMPLETED, CompletionResult.NOT_OWNER, CompletionResult.COMPLETED);
        assertThat(claim(inA)).isEqualTo(new Duplicate(true));
        assertInProgressEndingWithin(claim(inB), LEASE);
        assertThat(claim(inC)).isEqualTo(new Duplicate(true));
    }

    @Test
    void completeAllOfLargeBatchAnswersAsOneByOneCompletesWould() {
        int count = 1_000;
        List<StoreKey> keys = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            keys.add(key("bulk-" + i));
        }
        List<Acquired> owners = acquireAll(keys);
        advance(LEASE);
        // Every lease ran out. By i % 4: left alone (its owner still completes), taken over (the owner is
        // stale), already completed (a retry), released (nobody's).
        List<StoreKey> takenOver = new ArrayList<>();
        for (int i = 1; i < count; i += 4) {
            takenOver.add(keys.get(i));
        }
        acquireAll(takenOver);
        List<CompletionResult> expected = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            switch (i % 4) {
                case 0 -> expected.add(CompletionResult.COMPLETED);
                case 1 -> expected.add(CompletionResult.NOT_OWNER);
                case 2 -> {
                    assertThat(store.complete(keys.get(i), owners.get(i).token(), RETENTION)).isTrue();
                    expected.add(CompletionResult.COMPLETED);
                }
                default -> {
                    assertThat(store.release(keys.get(i), owners.get(i).token())).isTrue();
                    expected.add(CompletionResult.NOT_OWNER);
                }
            }
        }
        List<Integer> order = new ArrayList<>(IntStream.range(0, count).boxed().toList());
        Collections.shuffle(order, new Random(7));

        List<CompletionResult> results = completeAll(order.stream()
                .map(i -> completion(keys.get(i), owners.get(i))).toList());

        assertThat(results).containsExactlyElementsOf(order.stream().map(expected::get).toList());
        List<ClaimResult> after = store.claim(keys.stream().map(DedupStoreContract::request).toList());
        for (int i = 0; i < count; i++) {
            ClaimResult result = after.get(i);
            switch (i % 4) {
                case 0, 2 -> assertThat(result).as("claim of %s", keys.get(i)).isEqualTo(new Duplicate(true));
                case 1 -> assertThat(result).as("claim of %s", keys.get(i)).isInstanceOf(InProgress.class);
                default -> assertThat(result).as("claim of %s", keys.get(i))
                        .isInstanceOfSatisfying(Acquired.class, a -> assertThat(a.attempt()).isEqualTo(1));
            }
        }
    }

    @Test
    void completeAllKeepsTheRecordedStartsSemanticsOfComplete() {
        StoreKey key = key("order-1");
        Acquired stale = acquire(key);
        assertThat(recordStart(key, stale.token())).isEqualTo(1);
        advance(LEASE);
        Acquired owner = acquire(key);

        assertThat(completeAll(List.of(completion(key, stale)))).containsExactly(CompletionResult.NOT_OWNER);
        assertThat(recordStart(key, owner.token())).as("the stale entry changed nothing").isEqualTo(2);

        assertThat(completeAll(List.of(completion(key, owner)))).containsExactly(CompletionResult.COMPLETED);
        assertThat(recordStart(key, owner.token())).as("a start of the completed key").isZero();
        assertThat(claim(key)).isEqualTo(new Duplicate(true));
        assertThat(completeAll(List.of(completion(key, owner)))).as("a retried completion")
                .containsExactly(CompletionResult.COMPLETED);
    }

    @Test
    void completeAllReportsOnlyTheKeyWhoseWriteFailedAsFailed() {
        StoreKey before = key("before");
        StoreKey broken = key("broken");
        StoreKey after = key("after");
        List<Acquired> owners = acquireAll(List.of(before, broken, after));
        boolean failing = failWritesOf(broken);

        List<CompletionResult> results = completeAll(completions(List.of(before, broken, after), owners));

        assertThat(results.get(0)).as("the key before the failing one").isEqualTo(CompletionResult.COMPLETED);
        assertThat(results.get(2)).as("the key after the failing one").isEqualTo(CompletionResult.COMPLETED);
        if (failing) {
            assertThat(results.get(1)).as("the key whose write failed").isInstanceOf(CompletionResult.Failed.class);
        } else {
            assertThat(results.get(1)).as("the store cannot fail one key alone").isEqualTo(CompletionResult.COMPLETED);
        }
        assertThat(claim(before)).isEqualTo(new Duplicate(true));
        assertThat(claim(after)).isEqualTo(new Duplicate(true));
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void concurrentCompleteAllsOfTheSameKeysAnswerEveryOwnersEntryCompleted() throws Exception {
        int count = 200;
        List<StoreKey> keys = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            keys.add(key("raced-" + i));
        }
        List<Acquired> owners = acquireAll(keys);
        Queue<String> unexpected = new ConcurrentLinkedQueue<>();
        CyclicBarrier start = new CyclicBarrier(RACING_THREADS);

        // Every thread completes every key, as retries racing their own first tries would, in batches of
        // mixed sizes and orders, so batches overlap in every way.
        runOnThreads(thread -> {
            List<Integer> order = new ArrayList<>(IntStream.range(0, count).boxed().toList());
            Collections.shuffle(order, new Random(thread));
            int batchSize = switch (thread % 4) {
                case 0 -> 1;
                case 1 -> 7;
                case 2 -> 50;
                default -> count;
            };
            start.await(30, TimeUnit.SECONDS);
            for (int from = 0; from < count; from += batchSize) {
                List<Integer> batch = order.subList(from, Math.min(count, from + batchSize));
                List<CompletionResult> results = store.completeAll(batch.stream()
                        .map(i -> completion(keys.get(i), owners.get(i))).toList());
                for (int j = 0; j < batch.size(); j++) {
                    if (!CompletionResult.COMPLETED.equals(results.get(j))) {
                        unexpected.add(keys.get(batch.get(j)).id() + " -> " + results.get(j));
                    }
                }
            }
        });

        assertThat(unexpected).as("owners' completions not answered COMPLETED").isEmpty();
        assertThat(store.claim(keys.stream().map(DedupStoreContract::request).toList()))
                .containsOnly(new Duplicate(true));
    }

    // ---------------------------------------------------------------- keys

    @Test
    void namespacesIsolateTheSameId() {
        StoreKey inA = new StoreKey(namespace + "-a", "order-1");
        StoreKey inB = new StoreKey(namespace + "-b", "order-1");

        Acquired a = acquire(inA);
        acquire(inB);
        assertThat(store.complete(inA, a.token(), RETENTION)).isTrue();

        assertThat(claim(inA)).isEqualTo(new Duplicate(true));
        assertInProgressEndingWithin(claim(inB), LEASE);
    }

    @Test
    void namespaceAndIdAreNotJoinedAmbiguously() {
        StoreKey[] keys = {
            new StoreKey(namespace + ":x", "y"),
            new StoreKey(namespace, "x:y"),
            new StoreKey(namespace + "\0x", "y"),
            new StoreKey(namespace, "x\0y"),
            new StoreKey(namespace + "/x", "y"),
            new StoreKey(namespace, "x/y"),
        };
        for (StoreKey key : keys) {
            assertThat(claim(key)).as("claim of %s", key).isInstanceOf(Acquired.class);
        }
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.idem.testkit.DedupStoreContract#unusualIds")
    void keyWithAnyTextIsKeptExactly(String description, String id) {
        StoreKey key = key(id);
        Acquired acquired = acquire(key);
        assertThat(store.complete(key, acquired.token(), RETENTION)).isTrue();

        assertThat(claim(key)).isEqualTo(new Duplicate(true));
        StoreKey lastCharDiffers = key(withLastCodePointChanged(id));
        assertThat(claim(lastCharDiffers)).as("a key whose last character differs").isInstanceOf(Acquired.class);
    }

    @Test
    void keysThatDifferOnlyInCaseSpaceOrNormalisationAreDistinct() {
        StoreKey key = key("Order-\u00e91");
        Acquired acquired = acquire(key);
        assertThat(store.complete(key, acquired.token(), RETENTION)).isTrue();

        for (String near : List.of("order-\u00e91", "ORDER-\u00c91", "Order-\u00e91 ", " Order-\u00e91",
                "Order-\u00e91\t", "Order-e\u03011")) {
            assertThat(claim(key(near))).as("claim of '%s'", near).isInstanceOf(Acquired.class);
        }
    }

    // ---------------------------------------------------------------- concurrency

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void concurrentClaimsOfSameKeysAcquireEachKeyExactlyOnce() throws Exception {
        List<StoreKey> keys = new ArrayList<>();
        for (int i = 0; i < RACED_KEYS; i++) {
            keys.add(key("raced-" + i));
        }
        Map<StoreKey, Queue<Acquired>> acquired = new ConcurrentHashMap<>();
        Queue<String> unexpected = new ConcurrentLinkedQueue<>();
        CyclicBarrier start = new CyclicBarrier(RACING_THREADS);

        runOnThreads(thread -> {
            List<StoreKey> order = new ArrayList<>(keys);
            Collections.shuffle(order, new Random(thread));
            // Mixed batch sizes race single claims against whole-batch claims of the same keys.
            int batchSize = switch (thread % 4) {
                case 0 -> 1;
                case 1 -> 7;
                case 2 -> 100;
                default -> RACED_KEYS;
            };
            start.await(30, TimeUnit.SECONDS);
            for (int from = 0; from < order.size(); from += batchSize) {
                List<StoreKey> batch = order.subList(from, Math.min(order.size(), from + batchSize));
                List<ClaimRequest> requests = new ArrayList<>(batch.size());
                for (StoreKey key : batch) {
                    requests.add(request(key));
                }
                List<ClaimResult> results = store.claim(requests);
                for (int i = 0; i < batch.size(); i++) {
                    ClaimResult result = results.get(i);
                    if (result instanceof Acquired a) {
                        acquired.computeIfAbsent(batch.get(i), k -> new ConcurrentLinkedQueue<>()).add(a);
                    } else if (!(result instanceof InProgress)) {
                        unexpected.add(batch.get(i).id() + " -> " + result);
                    }
                }
            }
        });

        assertThat(unexpected).as("results other than Acquired or InProgress while nobody completed").isEmpty();
        assertThat(acquired).as("keys acquired").hasSize(RACED_KEYS);
        acquired.forEach((key, owners) -> assertThat(owners).as("owners of %s", key.id()).hasSize(1));

        Queue<StoreKey> notCompleted = new ConcurrentLinkedQueue<>();
        runOnThreads(thread -> {
            for (int i = thread; i < RACED_KEYS; i += RACING_THREADS) {
                StoreKey key = keys.get(i);
                if (!store.complete(key, acquired.get(key).peek().token(), RETENTION)) {
                    notCompleted.add(key);
                }
            }
        });
        assertThat(notCompleted).as("keys whose owner could not complete them").isEmpty();

        List<ClaimRequest> all = new ArrayList<>();
        for (StoreKey key : keys) {
            all.add(request(key));
        }
        assertThat(store.claim(all)).as("every key is completed, none left claimed")
                .hasSize(RACED_KEYS)
                .containsOnly(new Duplicate(true));
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void concurrentRecordStartsOfOneKeyCountEveryStartOnce() throws Exception {
        StoreKey key = key("order-1");
        Acquired stale = acquire(key);
        advance(LEASE);
        Acquired owner = acquire(key);
        Queue<Integer> counted = new ConcurrentLinkedQueue<>();
        Queue<String> unexpected = new ConcurrentLinkedQueue<>();
        CyclicBarrier start = new CyclicBarrier(RACING_THREADS);

        // A quarter of the threads hold the stale owner's token: they must record nothing, even mid-race.
        runOnThreads(thread -> {
            boolean staleThread = thread % 4 == 3;
            long token = staleThread ? stale.token() : owner.token();
            start.await(30, TimeUnit.SECONDS);
            for (int i = 0; i < STARTS_PER_THREAD; i++) {
                int starts = recordStart(key, token);
                if (staleThread && starts != 0) {
                    unexpected.add("the stale owner's start answered " + starts);
                } else if (!staleThread) {
                    counted.add(starts);
                }
            }
        });

        int total = (RACING_THREADS - RACING_THREADS / 4) * STARTS_PER_THREAD;
        assertThat(unexpected).isEmpty();
        assertThat(counted.stream().sorted().toList()).as("the owner's starts, each counted once")
                .isEqualTo(IntStream.rangeClosed(1, total).boxed().toList());
        assertThat(recordStart(key, owner.token())).as("the start after the race").isEqualTo(total + 1);
        assertInProgressEndingWithin(claim(key), LEASE);
        assertThat(store.complete(key, owner.token(), RETENTION)).isTrue();
    }

    // ---------------------------------------------------------------- helpers

    /** Ids a store must keep exactly: text that breaks naive quoting, encoding or key joining. */
    protected static Stream<Arguments> unusualIds() {
        String longest = "k".repeat(StoreKey.MAX_ID_BYTES - 4) + "\uD83D\uDE00";
        assertThat(longest.getBytes(StandardCharsets.UTF_8)).hasSize(StoreKey.MAX_ID_BYTES);
        return Stream.of(
                Arguments.of("plain ASCII", "order-42"),
                Arguments.of("emoji", "\uD83D\uDE00 party \uD83C\uDF89"),
                Arguments.of("CJK and Hangul", "\u6f22\u5b57\u304b\u306a\ud55c\uae00"),
                Arguments.of("quotes", "it's \"quoted\" `twice`"),
                Arguments.of("SQL injection", "'; DROP TABLE x; --"),
                Arguments.of("colons", "a:b::c:"),
                Arguments.of("newlines", "line1\nline2\r\n"),
                Arguments.of("NUL char", "before\0after"),
                Arguments.of("only NUL", "\0"),
                Arguments.of("LIKE wildcards and backslash", "100% _done_ \\ \\\\"),
                Arguments.of("glob and hash tag", "*?[a-z]{slot}"),
                Arguments.of("a " + StoreKey.MAX_ID_BYTES + "-byte UTF-8 key", longest));
    }

    private static String withLastCodePointChanged(String id) {
        int last = id.offsetByCodePoints(id.length(), -1);
        // Flipping the lowest bit keeps the UTF-8 length (length classes start at even code points)
        // and never lands in the surrogate range, so the longest key stays within MAX_ID_BYTES.
        return id.substring(0, last) + Character.toString(id.codePointAt(last) ^ 1);
    }

    private static ClaimRequest request(StoreKey key) {
        return request(key, null);
    }

    private static ClaimRequest request(StoreKey key, String fingerprint) {
        return new ClaimRequest(key, fingerprint, LEASE, CLAIM_RETENTION);
    }

    private ClaimResult claim(StoreKey key) {
        return claim(request(key));
    }

    private ClaimResult claim(ClaimRequest request) {
        List<ClaimResult> results = store.claim(List.of(request));
        assertThat(results).as("results of a one-request batch").hasSize(1);
        return results.get(0);
    }

    private Acquired acquire(StoreKey key) {
        return acquire(request(key));
    }

    /**
     * Records a start through the store under test, failing at once on the SPI's default answer: a store
     * that records no starts has not implemented {@code recordStart}, which this contract requires.
     */
    private int recordStart(StoreKey key, long token) {
        int starts = store.recordStart(key, token);
        assertThat(starts).as("recordStart of %s answered DedupStore.STARTS_NOT_RECORDED, the SPI's default: "
                + "the contract requires the store to record starts (see DedupStore.recordStart)", key)
                .isNotEqualTo(DedupStore.STARTS_NOT_RECORDED);
        return starts;
    }

    /** Claims {@code keys} in one batch, every one of which must be acquired. */
    private List<Acquired> acquireAll(List<StoreKey> keys) {
        List<ClaimResult> results = store.claim(keys.stream().map(DedupStoreContract::request).toList());
        List<Acquired> owners = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            assertThat(results.get(i)).as("claim of %s", keys.get(i)).isInstanceOf(Acquired.class);
            owners.add((Acquired) results.get(i));
        }
        return owners;
    }

    private static CompletionRequest completion(StoreKey key, Acquired owner) {
        return new CompletionRequest(key, owner.token(), RETENTION);
    }

    private static List<CompletionRequest> completions(List<StoreKey> keys, List<Acquired> owners) {
        List<CompletionRequest> requests = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            requests.add(completion(keys.get(i), owners.get(i)));
        }
        return requests;
    }

    private List<CompletionResult> completeAll(List<CompletionRequest> requests) {
        List<CompletionResult> results = store.completeAll(requests);
        assertThat(results).as("results of a batch of %s completions", requests.size()).hasSize(requests.size());
        return results;
    }

    private Acquired acquire(ClaimRequest request) {
        ClaimResult result = claim(request);
        assertThat(result).as("claim of %s", request.key()).isInstanceOf(Acquired.class);
        return (Acquired) result;
    }

    private void completeWithFingerprint(StoreKey key, String fingerprint) {
        Acquired acquired = acquire(request(key, fingerprint));
        assertThat(store.complete(key, acquired.token(), RETENTION)).isTrue();
    }

    private static void assertInProgressEndingWithin(ClaimResult result, Duration atMost) {
        assertThat(result).isInstanceOf(InProgress.class);
        Duration retryAfter = ((InProgress) result).retryAfter();
        assertThat(retryAfter).as("retryAfter").isPositive().isLessThanOrEqualTo(atMost);
    }

    @FunctionalInterface
    private interface PerThread {
        void run(int thread) throws Exception;
    }

    private static void runOnThreads(PerThread work) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(RACING_THREADS);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < RACING_THREADS; t++) {
                int thread = t;
                done.add(pool.submit(() -> {
                    work.run(thread);
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(90, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /**
     * Passes every call to the store under test and remembers it, so that invariants spanning all
     * of a test's calls can be checked after it. Calls from racing threads are recorded in an order
     * that need not be the store's, so every check is one that holds whatever the order.
     */
    private static final class RecordingStore implements DedupStore {

        private enum Kind { CLAIM, COMPLETE, RELEASE, RENEW, RECORD_START }

        /** {@code forgets}: an accepted call that leaves the key absent at once, as a release does. */
        private record Call(Kind kind, int epoch, StoreKey key, Duration lease, ClaimResult result,
                long token, boolean accepted, int starts, boolean forgets) {
        }

        private record Slot(int epoch, StoreKey key) {
        }

        private final DedupStore store;
        private final Queue<Call> calls = new ConcurrentLinkedQueue<>();
        // Time moves only between epochs, so within one no lease can run out.
        private volatile int epoch;

        RecordingStore(DedupStore store) {
            this.store = store;
        }

        void newEpoch() {
            epoch++;
        }

        @Override
        public List<ClaimResult> claim(List<ClaimRequest> requests) {
            int now = epoch;
            List<ClaimResult> results = store.claim(requests);
            assertThat(results).as("claim results, one per request").hasSize(requests.size()).doesNotContainNull();
            for (int i = 0; i < requests.size(); i++) {
                ClaimRequest r = requests.get(i);
                calls.add(new Call(Kind.CLAIM, now, r.key(), r.lease(), results.get(i), 0, false, 0, false));
            }
            return results;
        }

        @Override
        public boolean complete(StoreKey key, long token, Duration retention) {
            int now = epoch;
            boolean accepted = store.complete(key, token, retention);
            calls.add(new Call(Kind.COMPLETE, now, key, null, null, token, accepted, 0,
                    accepted && forgetsAtOnce(retention)));
            return accepted;
        }

        @Override
        public List<CompletionResult> completeAll(List<CompletionRequest> requests) {
            int now = epoch;
            List<CompletionResult> results = store.completeAll(requests);
            assertThat(results).as("completeAll results, one per request").hasSize(requests.size())
                    .doesNotContainNull();
            for (int i = 0; i < requests.size(); i++) {
                CompletionRequest r = requests.get(i);
                boolean accepted = CompletionResult.COMPLETED.equals(results.get(i));
                calls.add(new Call(Kind.COMPLETE, now, r.key(), null, null, r.token(), accepted, 0,
                        accepted && forgetsAtOnce(r.retention())));
            }
            return results;
        }

        @Override
        public boolean release(StoreKey key, long token) {
            int now = epoch;
            boolean accepted = store.release(key, token);
            calls.add(new Call(Kind.RELEASE, now, key, null, null, token, accepted, 0, accepted));
            return accepted;
        }

        @Override
        public boolean renew(StoreKey key, long token, Duration lease) {
            int now = epoch;
            boolean accepted = store.renew(key, token, lease);
            calls.add(new Call(Kind.RENEW, now, key, lease, null, token, accepted, 0, false));
            return accepted;
        }

        @Override
        public int recordStart(StoreKey key, long token) {
            int now = epoch;
            int starts = store.recordStart(key, token);
            calls.add(new Call(Kind.RECORD_START, now, key, null, null, token, starts > 0, starts, false));
            return starts;
        }

        @Override
        public void checkHealth() {
            store.checkHealth();
        }

        @Override
        public void close() {
            store.close();
        }

        /** A completion kept for no time leaves the key absent at once: the next claim may acquire it afresh. */
        private static boolean forgetsAtOnce(Duration retention) {
            return retention.isNegative() || retention.isZero();
        }

        List<String> invariantViolations() {
            List<String> violations = new ArrayList<>();
            Duration longestLease = Duration.ZERO;
            Map<Long, StoreKey> tokenOwners = new HashMap<>();
            Map<Slot, Integer> acquired = new HashMap<>();
            Map<Slot, Integer> released = new HashMap<>();
            for (Call call : calls) {
                if (call.lease() != null && call.lease().compareTo(longestLease) > 0) {
                    longestLease = call.lease();
                }
                if (call.result() instanceof Acquired a) {
                    StoreKey earlier = tokenOwners.putIfAbsent(a.token(), call.key());
                    if (earlier != null) {
                        violations.add("token " + a.token() + " was handed out twice: for " + earlier
                                + " and for " + call.key());
                    }
                    if (a.attempt() < 1) {
                        violations.add("attempt " + a.attempt() + " for " + call.key() + "; attempts start at 1");
                    }
                    acquired.merge(new Slot(call.epoch(), call.key()), 1, Integer::sum);
                }
                if (call.forgets()) {
                    released.merge(new Slot(call.epoch(), call.key()), 1, Integer::sum);
                }
            }
            for (Call call : calls) {
                if (call.result() instanceof InProgress p
                        && (p.retryAfter().isNegative() || p.retryAfter().isZero()
                                || p.retryAfter().compareTo(longestLease) > 0)) {
                    violations.add("retryAfter " + p.retryAfter() + " for " + call.key()
                            + " is not within (0, " + longestLease + "], the longest lease asked for");
                }
                if (call.kind() == Kind.RECORD_START && call.starts() < 0) {
                    violations.add("recordStart of " + call.key() + " answered " + call.starts()
                            + "; a store records starts (at least 1) or answers 0 for a token not the owner's");
                }
                if (call.accepted() && !call.key().equals(tokenOwners.get(call.token()))) {
                    violations.add(call.kind() + " of " + call.key() + " accepted token " + call.token()
                            + ", which the store never handed out for that key");
                }
            }
            // Counting, not ordering, keeps this check true whatever order racing threads recorded in.
            acquired.forEach((slot, times) -> {
                int releases = released.getOrDefault(slot, 0);
                if (times > 1 + releases) {
                    violations.add(slot.key() + " was acquired " + times + " times with " + releases
                            + " releases (or completions kept for no time) and no time passing in between: two live owners");
                }
            });
            return violations;
        }
    }
}
