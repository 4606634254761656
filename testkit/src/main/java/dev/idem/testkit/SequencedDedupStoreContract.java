package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.CompletionRequest;
import dev.idem.spi.CompletionResult;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StoreKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestInfo;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The contract of a {@link SequencedDedupStore}: the sequence guard's watermarks of docs/design.md ("The sequence
 * guard") as JUnit 5 tests. It runs beside {@link DedupStoreContract}, not instead of it: a store's test class
 * for the key life cycle extends that one, and a second class extends this one and says how to make the store:
 *
 * <pre>{@code
 * class CaffeineSequencedDedupStoreTest extends SequencedDedupStoreContract {
 *     private final DedupStoreProvider provider = new CaffeineDedupStoreProvider();
 *
 *     @Override
 *     protected SequencedDedupStore createStore(ManualTicker ticker) {
 *         return (SequencedDedupStore) provider.create(
 *                 TestPluginConfig.defaults("store.caffeine", provider.configSpec()), new StoreContext(ticker));
 *     }
 * }
 * }</pre>
 *
 * <h2>What it checks</h2>
 * A watermark is 0 until raised; {@code completeAndAdvance} completes the key and raises the watermark together,
 * never lowers it, changes neither for a token that is not the owner's (another token, an absent key, a stale
 * owner after a takeover) and is idempotent for the owner; {@code completeAll} raises each request's watermark
 * with its key, the highest number of an aggregate winning within a batch, and leaves the watermarks of
 * requests without an advance or not the owner's alone. Watermarks of two aggregates, of two namespaces, and of
 * an aggregate and a message key of the same text are independent; aggregate IDs of any text (see
 * {@link DedupStoreContract#unusualIds()}) are kept exactly; every {@code long} number is kept exactly (a Lua or
 * JavaScript double is not enough). A watermark is forgotten once its retention passes without a raise or a
 * completion advancing it, and is then raised afresh from 0; racing raises from many threads end at the
 * highest number, and no thread ever reads a watermark below a number it raised to.
 *
 * <h2>Time and isolation</h2>
 * As for {@link DedupStoreContract}: no test sleeps; {@link #advance(Duration)} calls
 * {@link #advanceStoreClock(Duration)}, which a store on a server clock overrides to move its stored deadlines
 * (the watermarks' as well as the keys') back, and such a store overrides {@link #clockResolution()} too. Each
 * test gets a new store and a namespace of its own ({@link #namespace()}); every key and aggregate of a test has
 * a namespace starting with it. Keys are completed for {@link #RETENTION}, watermarks kept for
 * {@link #SEQUENCE_RETENTION}: the two differ, so a store that confuses them fails.
 */
public abstract class SequencedDedupStoreContract {

    /** The lease every claim of the suite asks for. */
    protected static final Duration LEASE = Duration.ofSeconds(30);

    /** How long a claim whose lease ran out is remembered. */
    protected static final Duration CLAIM_RETENTION = Duration.ofMinutes(5);

    /** How long a completed key is remembered. */
    protected static final Duration RETENTION = Duration.ofHours(1);

    /** How long a watermark is remembered after its last change: not {@link #RETENTION}, on purpose. */
    protected static final Duration SEQUENCE_RETENTION = Duration.ofHours(2);

    private static final int RACING_THREADS = 8;
    private static final int RAISES_PER_THREAD = 20;

    private ManualTicker ticker;
    private SequencedDedupStore store;
    private String namespace;

    /**
     * Makes the store under test; called before each test, with the ticker rules of
     * {@link DedupStoreContract#createStore}.
     */
    protected abstract SequencedDedupStore createStore(ManualTicker ticker);

    /**
     * Makes {@code duration} pass on the store's clock; default: advances the ticker. A store on a server clock
     * moves every stored deadline of this test's namespace back instead, its watermarks' included.
     */
    protected void advanceStoreClock(Duration duration) {
        ticker.advance(duration);
    }

    /** The smallest step of time the store tells apart; see {@link DedupStoreContract#clockResolution()}. */
    protected Duration clockResolution() {
        return Duration.ofNanos(1);
    }

    /** Makes {@code duration} pass for the store, through {@link #advanceStoreClock(Duration)}. */
    protected final void advance(Duration duration) {
        advanceStoreClock(duration);
    }

    /** The store under test. */
    protected final SequencedDedupStore store() {
        return store;
    }

    /** The ticker handed to {@link #createStore} for the current test. */
    protected final ManualTicker ticker() {
        return ticker;
    }

    /** This test's namespace; every key and aggregate of the suite has a namespace starting with it. */
    protected final String namespace() {
        return namespace;
    }

    /** A message key with {@code id} in this test's namespace. */
    protected final StoreKey key(String id) {
        return new StoreKey(namespace, id);
    }

    /** An aggregate with {@code id} in this test's namespace. */
    protected final StoreKey aggregate(String id) {
        return new StoreKey(namespace, id);
    }

    /** An advance of {@code aggregate} to {@code number}, kept for {@link #SEQUENCE_RETENTION}. */
    protected static SequenceAdvance advanceTo(StoreKey aggregate, long number) {
        return new SequenceAdvance(aggregate, number, SEQUENCE_RETENTION);
    }

    @BeforeEach
    protected final void createStoreForTest(TestInfo test) {
        String method = test.getTestMethod().map(m -> m.getName()).orElse("test");
        if (method.length() > 40) {
            method = method.substring(0, 40);
        }
        namespace = "sequence-" + method + "-" + UUID.randomUUID().toString().substring(0, 8);
        ticker = new ManualTicker();
        store = createStore(ticker);
        assertThat(store).as("createStore(ticker)").isNotNull();
    }

    @AfterEach
    protected final void closeStore() {
        if (store != null) {
            store.close();
            store = null;
        }
    }

    // ---------------------------------------------------------------- completeAndAdvance

    @Test
    void watermarkOfAnAggregateNeverAdvancedIsZero() {
        assertThat(store.watermark(aggregate("account-1"))).isZero();
    }

    @Test
    void completeAndAdvanceCompletesTheKeyAndRaisesTheWatermark() {
        StoreKey account = aggregate("account-1");
        StoreKey key = key("event-1");
        Acquired owner = acquire(key);

        assertThat(store.completeAndAdvance(key, owner.token(), RETENTION, advanceTo(account, 1))).isTrue();

        assertThat(store.watermark(account)).isEqualTo(1);
        assertThat(claim(key)).as("the key, completed").isEqualTo(new Duplicate(true));

        completeAndAdvance(key("event-2"), account, 2);
        assertThat(store.watermark(account)).isEqualTo(2);
    }

    @Test
    void completeAndAdvanceNeverLowersTheWatermark() {
        StoreKey account = aggregate("account-1");
        completeAndAdvance(key("event-5"), account, 5);

        StoreKey older = key("event-3");
        Acquired owner = acquire(older);
        assertThat(store.completeAndAdvance(older, owner.token(), RETENTION, advanceTo(account, 3)))
                .as("a completion with a lower number still completes its key").isTrue();

        assertThat(store.watermark(account)).as("raised to 5, then to 3").isEqualTo(5);
        assertThat(claim(older)).isEqualTo(new Duplicate(true));

        completeAndAdvance(key("event-5-again"), account, 5);
        assertThat(store.watermark(account)).as("the same number again").isEqualTo(5);
    }

    @Test
    void completeAndAdvanceWithAnotherTokenChangesNeitherTheKeyNorTheWatermark() {
        StoreKey account = aggregate("account-1");
        completeAndAdvance(key("event-1"), account, 1);
        StoreKey key = key("event-2");
        Acquired owner = acquire(key);

        assertThat(store.completeAndAdvance(key, owner.token() + 1, RETENTION, advanceTo(account, 2))).isFalse();
        assertThat(store.completeAndAdvance(key, owner.token() - 1, RETENTION, advanceTo(account, 9))).isFalse();

        assertThat(store.watermark(account)).isEqualTo(1);
        assertInProgress(claim(key));
        assertThat(store.completeAndAdvance(key, owner.token(), RETENTION, advanceTo(account, 2))).isTrue();
        assertThat(store.watermark(account)).isEqualTo(2);
    }

    @Test
    void completeAndAdvanceOfAnAbsentKeyChangesNothing() {
        StoreKey account = aggregate("account-1");
        StoreKey key = key("never-claimed");

        assertThat(store.completeAndAdvance(key, 1, RETENTION, advanceTo(account, 4))).isFalse();

        assertThat(store.watermark(account)).isZero();
        assertThat(acquire(key).attempt()).as("nothing was left behind").isEqualTo(1);
    }

    @Test
    void completeAndAdvanceByAStaleOwnerAfterATakeoverChangesNeitherTheKeyNorTheWatermark() {
        StoreKey account = aggregate("account-1");
        StoreKey key = key("event-1");
        Acquired stale = acquire(key);
        advance(LEASE);
        Acquired owner = acquire(key);

        assertThat(store.completeAndAdvance(key, stale.token(), RETENTION, advanceTo(account, 1))).isFalse();

        assertThat(store.watermark(account)).isZero();
        assertInProgress(claim(key));
        assertThat(store.completeAndAdvance(key, owner.token(), RETENTION, advanceTo(account, 1))).isTrue();
        assertThat(store.watermark(account)).isEqualTo(1);
    }

    @Test
    void completeAndAdvanceIsIdempotentForTheOwner() {
        StoreKey account = aggregate("account-1");
        StoreKey key = key("event-1");
        Acquired owner = acquire(key);
        assertThat(store.completeAndAdvance(key, owner.token(), RETENTION, advanceTo(account, 1))).isTrue();

        assertThat(store.completeAndAdvance(key, owner.token(), RETENTION, advanceTo(account, 1)))
                .as("a retried completion").isTrue();
        assertThat(store.completeAndAdvance(key, owner.token() + 1, RETENTION, advanceTo(account, 7)))
                .as("another token").isFalse();

        assertThat(store.watermark(account)).isEqualTo(1);
        assertThat(claim(key)).isEqualTo(new Duplicate(true));
    }

    // ---------------------------------------------------------------- completeAll

    @Test
    void completeAllRaisesEachWatermarkWithItsKeyAndTheHighestNumberOfAnAggregateWins() {
        StoreKey first = aggregate("account-a");
        StoreKey fenced = aggregate("account-b");
        StoreKey many = aggregate("account-c");
        StoreKey a1 = key("a-1");
        StoreKey plain = key("plain");
        StoreKey b7 = key("b-7");
        StoreKey c3 = key("c-3");
        StoreKey c5 = key("c-5");
        StoreKey c4 = key("c-4");
        List<Acquired> owners = acquireAll(List.of(a1, plain, b7, c3, c5, c4));

        List<CompletionResult> results = completeAll(List.of(
                new CompletionRequest(a1, owners.get(0).token(), RETENTION, advanceTo(first, 1)),
                new CompletionRequest(plain, owners.get(1).token(), RETENTION),
                new CompletionRequest(b7, owners.get(2).token() + 1, RETENTION, advanceTo(fenced, 7)),
                new CompletionRequest(c3, owners.get(3).token(), RETENTION, advanceTo(many, 3)),
                new CompletionRequest(c5, owners.get(4).token(), RETENTION, advanceTo(many, 5)),
                new CompletionRequest(c4, owners.get(5).token(), RETENTION, advanceTo(many, 4))));

        assertThat(results).containsExactly(CompletionResult.COMPLETED, CompletionResult.COMPLETED,
                CompletionResult.NOT_OWNER, CompletionResult.COMPLETED, CompletionResult.COMPLETED,
                CompletionResult.COMPLETED);
        assertThat(store.watermark(first)).isEqualTo(1);
        assertThat(store.watermark(fenced)).as("raised only with a key the token owns").isZero();
        assertThat(store.watermark(many)).as("3, 5 and 4 in one batch").isEqualTo(5);
        for (StoreKey key : List.of(a1, plain, c3, c5, c4)) {
            assertThat(claim(key)).as("claim of %s", key.id()).isEqualTo(new Duplicate(true));
        }
        assertInProgress(claim(b7));
    }

    @Test
    void completeAllIsIdempotentForTheOwnerAndNeverLowersAWatermark() {
        StoreKey account = aggregate("account-1");
        completeAndAdvance(key("event-9"), account, 9);
        StoreKey late = key("event-4");
        StoreKey next = key("event-10");
        List<Acquired> owners = acquireAll(List.of(late, next));
        List<CompletionRequest> batch = List.of(
                new CompletionRequest(late, owners.get(0).token(), RETENTION, advanceTo(account, 4)),
                new CompletionRequest(next, owners.get(1).token(), RETENTION, advanceTo(account, 10)));

        assertThat(completeAll(batch)).containsOnly(CompletionResult.COMPLETED);
        assertThat(completeAll(batch)).as("the batch retried").containsOnly(CompletionResult.COMPLETED);

        assertThat(store.watermark(account)).isEqualTo(10);
    }

    @Test
    void completeAllWithoutAdvancesLeavesTheWatermarksAlone() {
        StoreKey account = aggregate("account-1");
        completeAndAdvance(key("event-2"), account, 2);
        List<StoreKey> keys = List.of(key("other-1"), key("other-2"));
        List<Acquired> owners = acquireAll(keys);

        assertThat(completeAll(List.of(new CompletionRequest(keys.get(0), owners.get(0).token(), RETENTION),
                new CompletionRequest(keys.get(1), owners.get(1).token(), RETENTION))))
                .containsOnly(CompletionResult.COMPLETED);

        assertThat(store.watermark(account)).isEqualTo(2);
        assertThat(store.watermark(aggregate("other-1"))).isZero();
    }

    // ---------------------------------------------------------------- what a watermark belongs to

    @Test
    void watermarksOfAggregatesAndNamespacesAreIndependent() {
        StoreKey account = aggregate("account-1");
        StoreKey otherAggregate = aggregate("account-2");
        StoreKey otherNamespace = new StoreKey(namespace + "-other", "account-1");
        completeAndAdvance(key("event-1"), account, 3);

        assertThat(store.watermark(otherAggregate)).isZero();
        assertThat(store.watermark(otherNamespace)).isZero();

        completeAndAdvance(new StoreKey(otherNamespace.namespace(), "event-1"), otherNamespace, 7);
        completeAndAdvance(key("event-2"), otherAggregate, 1);

        assertThat(store.watermark(account)).isEqualTo(3);
        assertThat(store.watermark(otherAggregate)).isEqualTo(1);
        assertThat(store.watermark(otherNamespace)).isEqualTo(7);
    }

    @Test
    void namespaceAndAggregateAreNotJoinedAmbiguously() {
        StoreKey joined = new StoreKey(namespace + ":a", "b");
        StoreKey split = new StoreKey(namespace, "a:b");
        completeAndAdvance(new StoreKey(joined.namespace(), "event-1"), joined, 4);

        assertThat(store.watermark(split)).isZero();
        assertThat(store.watermark(joined)).isEqualTo(4);
    }

    @Test
    void anAggregateAndAMessageKeyOfTheSameTextDoNotCollide() {
        // Stores may keep watermarks beside the keys (Redis keys, a second table): neither may be read as the other.
        StoreKey sameText = key("order-1");
        StoreKey sameTextAggregate = aggregate("order-1");
        completeAndAdvance(sameText, sameTextAggregate, 3);

        assertThat(claim(sameText)).as("the message key, completed").isEqualTo(new Duplicate(true));
        assertThat(store.watermark(sameTextAggregate)).isEqualTo(3);

        completeAndAdvance(key("event-1"), aggregate("order-2"), 8);
        Acquired fresh = acquire(key("order-2"));
        assertThat(fresh.attempt()).as("a message key of the raised aggregate's text").isEqualTo(1);
        assertThat(store.completeAndAdvance(key("order-2"), fresh.token(), RETENTION, advanceTo(aggregate("order-2"), 9)))
                .isTrue();
        assertThat(store.watermark(aggregate("order-2"))).isEqualTo(9);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.idem.testkit.DedupStoreContract#unusualIds")
    void aggregateWithAnyTextIsKeptExactly(String description, String id) {
        StoreKey account = aggregate(id);
        completeAndAdvance(key("event-1"), account, 4);

        assertThat(store.watermark(account)).isEqualTo(4);
        String shorter = id.substring(0, id.offsetByCodePoints(id.length(), -1));
        assertThat(store.watermark(aggregate(shorter))).as("the aggregate without its last character").isZero();
        assertThat(store.watermark(aggregate(withLastCodePointChanged(id)))).as("its last character changed").isZero();

        completeAndAdvance(key("event-2"), account, 6);
        assertThat(store.watermark(account)).isEqualTo(6);
    }

    @Test
    void watermarkKeepsEveryLongExactly() {
        StoreKey account = aggregate("account-1");
        long beyondDoubles = (1L << 53) + 1;

        completeAndAdvance(key("event-1"), account, beyondDoubles);
        assertThat(store.watermark(account)).isEqualTo(beyondDoubles);

        completeAndAdvance(key("event-2"), account, beyondDoubles - 1);
        assertThat(store.watermark(account)).as("one below, which a double cannot tell apart").isEqualTo(beyondDoubles);

        completeAndAdvance(key("event-3"), account, Long.MAX_VALUE - 1);
        completeAndAdvance(key("event-4"), account, Long.MAX_VALUE);
        assertThat(store.watermark(account)).isEqualTo(Long.MAX_VALUE);
    }

    // ---------------------------------------------------------------- retention

    @Test
    void watermarkIsForgottenOnceItsRetentionPassesWithoutAChangeAndThenStartsAfresh() {
        StoreKey account = aggregate("account-1");
        completeAndAdvance(key("event-5"), account, 5);

        advance(SEQUENCE_RETENTION.minus(clockResolution()));
        assertThat(store.watermark(account)).as("just before its retention ends").isEqualTo(5);

        advance(clockResolution());
        assertThat(store.watermark(account)).as("once its retention ended").isZero();

        completeAndAdvance(key("event-3"), account, 3);
        assertThat(store.watermark(account)).as("raised afresh, not kept at the forgotten 5").isEqualTo(3);
    }

    @Test
    void raisingTheWatermarkRenewsItsRetention() {
        StoreKey account = aggregate("account-1");
        completeAndAdvance(key("event-1"), account, 1);
        advance(SEQUENCE_RETENTION.dividedBy(2));
        completeAndAdvance(key("event-2"), account, 2);

        advance(SEQUENCE_RETENTION.minus(clockResolution()));
        assertThat(store.watermark(account)).as("a retention after the raise, not after the first one").isEqualTo(2);

        advance(clockResolution());
        assertThat(store.watermark(account)).isZero();
    }

    @Test
    void aCompletionWithAStaleNumberRenewsTheRetentionToo() {
        // SequencedDedupStore.completeAndAdvance: "unless it is already at or above it, refreshing its retention".
        StoreKey account = aggregate("account-1");
        completeAndAdvance(key("event-5"), account, 5);
        advance(SEQUENCE_RETENTION.dividedBy(2));
        completeAndAdvance(key("event-2"), account, 2);

        advance(SEQUENCE_RETENTION.minus(clockResolution()));
        assertThat(store.watermark(account)).isEqualTo(5);

        advance(clockResolution());
        assertThat(store.watermark(account)).isZero();
    }

    @Test
    void watermarkIsKeptForItsOwnRetentionNotTheKeys() {
        StoreKey account = aggregate("account-1");
        StoreKey key = key("event-1");
        Acquired owner = acquire(key);
        assertThat(store.completeAndAdvance(key, owner.token(), RETENTION,
                new SequenceAdvance(account, 1, RETENTION.multipliedBy(3)))).isTrue();

        advance(RETENTION);
        assertThat(acquire(key).attempt()).as("the key, forgotten after its retention").isEqualTo(1);
        assertThat(store.watermark(account)).as("the watermark, kept for its own").isEqualTo(1);
    }

    // ---------------------------------------------------------------- races

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void concurrentRaisesOfOneAggregateEndAtTheHighestNumberAndNeverGoBack() throws Exception {
        StoreKey account = aggregate("account-1");
        int total = RACING_THREADS * RAISES_PER_THREAD;
        List<Long> numbers = new ArrayList<>();
        for (long n = 1; n <= total; n++) {
            numbers.add(n);
        }
        Collections.shuffle(numbers, new Random(42));
        Queue<String> violations = new ConcurrentLinkedQueue<>();
        CyclicBarrier start = new CyclicBarrier(RACING_THREADS);

        runOnThreads(thread -> {
            List<Long> mine = numbers.subList(thread * RAISES_PER_THREAD, (thread + 1) * RAISES_PER_THREAD);
            start.await(30, TimeUnit.SECONDS);
            // Half the threads complete one by one, the other half in batches of five.
            int step = thread % 2 == 0 ? 1 : 5;
            for (int from = 0; from < mine.size(); from += step) {
                List<Long> batch = mine.subList(from, Math.min(mine.size(), from + step));
                List<StoreKey> keys = batch.stream().map(n -> key("event-" + n)).toList();
                List<Acquired> owners = acquireAll(keys);
                if (step == 1) {
                    if (!store.completeAndAdvance(keys.get(0), owners.get(0).token(), RETENTION,
                            advanceTo(account, batch.get(0)))) {
                        violations.add("the owner's completion of " + keys.get(0).id() + " was refused");
                    }
                } else {
                    List<CompletionRequest> requests = new ArrayList<>();
                    for (int i = 0; i < keys.size(); i++) {
                        requests.add(new CompletionRequest(keys.get(i), owners.get(i).token(), RETENTION,
                                advanceTo(account, batch.get(i))));
                    }
                    List<CompletionResult> results = store.completeAll(requests);
                    if (!results.stream().allMatch(CompletionResult.COMPLETED::equals)) {
                        violations.add("a batch of the owner's completions answered " + results);
                    }
                }
                long highest = batch.stream().mapToLong(Long::longValue).max().orElseThrow();
                long seen = store.watermark(account);
                if (seen < highest) {
                    violations.add("raised to " + highest + " but then read " + seen);
                }
            }
        });

        assertThat(violations).isEmpty();
        assertThat(store.watermark(account)).isEqualTo(total);
    }

    // ---------------------------------------------------------------- helpers

    /** Claims {@code key}, which must be acquired, and completes it raising {@code aggregate} to {@code number}. */
    protected final void completeAndAdvance(StoreKey key, StoreKey aggregate, long number) {
        Acquired owner = acquire(key);
        assertThat(store.completeAndAdvance(key, owner.token(), RETENTION, advanceTo(aggregate, number)))
                .as("the owner's completeAndAdvance of %s to %s", key.id(), number).isTrue();
    }

    /** Claims {@code key}, which must be acquired. */
    protected final Acquired acquire(StoreKey key) {
        ClaimResult result = claim(key);
        assertThat(result).as("claim of %s", key.id()).isInstanceOf(Acquired.class);
        return (Acquired) result;
    }

    /** Claims {@code key} in a batch of one. */
    protected final ClaimResult claim(StoreKey key) {
        List<ClaimResult> results = store.claim(List.of(request(key)));
        assertThat(results).as("results of a one-request batch").hasSize(1);
        return results.get(0);
    }

    private List<Acquired> acquireAll(List<StoreKey> keys) {
        List<ClaimResult> results = store.claim(keys.stream().map(SequencedDedupStoreContract::request).toList());
        List<Acquired> owners = new ArrayList<>(keys.size());
        for (int i = 0; i < keys.size(); i++) {
            assertThat(results.get(i)).as("claim of %s", keys.get(i).id()).isInstanceOf(Acquired.class);
            owners.add((Acquired) results.get(i));
        }
        return owners;
    }

    private List<CompletionResult> completeAll(List<CompletionRequest> requests) {
        List<CompletionResult> results = store.completeAll(requests);
        assertThat(results).as("results of a batch of %s completions", requests.size()).hasSize(requests.size());
        return results;
    }

    private static ClaimRequest request(StoreKey key) {
        return new ClaimRequest(key, null, LEASE, CLAIM_RETENTION);
    }

    private static void assertInProgress(ClaimResult result) {
        assertThat(result).as("the key, still claimed by its owner").isInstanceOf(InProgress.class);
    }

    private static String withLastCodePointChanged(String id) {
        int last = id.offsetByCodePoints(id.length(), -1);
        return id.substring(0, last) + Character.toString(id.codePointAt(last) ^ 1);
    }

    /** Work of one racing thread. */
    @FunctionalInterface
    protected interface PerThread {
        void run(int thread) throws Exception;
    }

    /** Runs {@code work} on {@value #RACING_THREADS} threads at once and waits for all, failing with the first failure. */
    protected static void runOnThreads(PerThread work) throws Exception {
        runOnThreads(RACING_THREADS, work);
    }

    /** Runs {@code work} on {@code threads} threads at once and waits for all, failing with the first failure. */
    protected static void runOnThreads(int threads, PerThread work) throws Exception {
        ExecutorService pool = Executors.newFixedThreadPool(threads);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < threads; t++) {
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
}
