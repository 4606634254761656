package dev.idem.store.caffeine;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.ClaimResult.InProgress;
import dev.idem.spi.DedupStore;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.StoreContext;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.testkit.InspectableDedupStoreContract;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.TestPluginConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.Random;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

class CaffeineDedupStoreTest extends InspectableDedupStoreContract {

    private static final CaffeineDedupStoreProvider PROVIDER = new CaffeineDedupStoreProvider();

    @Override
    protected InspectableDedupStore createInspectableStore(ManualTicker ticker) {
        return (InspectableDedupStore) PROVIDER.create(TestPluginConfig.defaults("store.caffeine", PROVIDER.configSpec()),
                new StoreContext(ticker));
    }

    @Test
    void sizeBoundEvictsOnlyCompletedKeys() {
        CaffeineDedupStore store = store(10);
        List<StoreKey> running = keys("running", 50);
        List<StoreKey> done = keys("done", 100);
        claimAll(store, running);
        List<Acquired> owners = claimAll(store, done);

        for (int i = 0; i < done.size(); i++) {
            assertThat(store.complete(done.get(i), owners.get(i).token(), RETENTION)).isTrue();
        }
        store.cleanUp();

        assertThat(store.completedCount()).isEqualTo(10);
        assertThat(store.keyCount()).isEqualTo(50 + 10);
        for (StoreKey key : running) {
            assertThat(claimOne(store, key)).as("claim of %s", key.id()).isInstanceOf(InProgress.class);
        }
        long remembered = done.stream().filter(key -> claimOne(store, key) instanceof Duplicate).count();
        assertThat(remembered).isEqualTo(10);
    }

    @Test
    void sizeBoundForgetsTheOldestCompletionsFirst() {
        // A redelivery comes soon after the first delivery: the bound must drop the oldest completions,
        // whatever was read in between, never a fresh one.
        CaffeineDedupStore store = store(1_000);
        List<StoreKey> done = keys("done", 20_000);
        Random random = new Random(11);
        for (int i = 0; i < done.size(); i++) {
            Acquired owner = (Acquired) claimOne(store, done.get(i));
            assertThat(store.complete(done.get(i), owner.token(), RETENTION)).isTrue();
            if (i > 0 && random.nextInt(10) == 0) {
                assertThat(claimOne(store, done.get(i - 1 - random.nextInt(Math.min(i, 100)))))
                        .isInstanceOf(Duplicate.class);
            }
        }

        assertThat(store.completedCount()).isEqualTo(1_000);
        for (StoreKey key : done.subList(done.size() - 1_000, done.size())) {
            assertThat(claimOne(store, key)).as("claim of %s, among the last 1,000 completed", key.id())
                    .isInstanceOf(Duplicate.class);
        }
        assertThat(claimOne(store, done.get(done.size() - 1_001))).as("the newest key past the bound")
                .isInstanceOf(Acquired.class);
    }

    @Test
    void keyRepeatedInBatchIsAcquiredOnceEvenIfItsLeaseEndsWithinTheBatch() {
        // Every reading of this clock is a millisecond after the last, so a 1ns lease has always
        // ended by the next request of the batch.
        AtomicLong clock = new AtomicLong();
        CaffeineDedupStore store = new CaffeineDedupStore(10, 0, () -> clock.addAndGet(1_000_000));
        StoreKey key = new StoreKey("ns", "order-1");
        ClaimRequest request = new ClaimRequest(key, null, Duration.ofNanos(1), CLAIM_RETENTION);

        List<ClaimResult> results = store.claim(List.of(request, request, request));

        assertThat(results.get(0)).isInstanceOf(Acquired.class);
        assertThat(results.subList(1, 3)).allSatisfy(r -> assertThat(r).isInstanceOf(InProgress.class));
        assertThat(claimOne(store, key)).as("a later batch takes it over")
                .isInstanceOfSatisfying(Acquired.class, a -> assertThat(a.attempt()).isEqualTo(2));
    }

    @Test
    void claimedKeysBeyondSizeBoundAreAllKept() {
        CaffeineDedupStore store = store(1);
        List<StoreKey> running = keys("running", 1_000);

        claimAll(store, running);

        assertThat(store.keyCount()).isEqualTo(1_000);
        assertThat(store.completedCount()).isZero();
    }

    @Test
    void expiredKeysAreRemovedFromMemoryNotOnlyHidden() {
        ManualTicker ticker = new ManualTicker();
        CaffeineDedupStore store = new CaffeineDedupStore(1_000, 0, ticker);
        List<StoreKey> done = keys("done", 100);
        List<Acquired> owners = claimAll(store, done);
        for (int i = 0; i < done.size(); i++) {
            store.complete(done.get(i), owners.get(i).token(), RETENTION);
        }
        claimAll(store, keys("abandoned", 100));
        assertThat(store.keyCount()).isEqualTo(200);

        ticker.advance(RETENTION.plus(LEASE).plus(CLAIM_RETENTION));

        assertThat(store.completedCount()).as("completed keys, removed by the cache's maintenance").isZero();
        List<StoreKey> later = keys("later", CaffeineDedupStore.SWEEP_EVERY);
        claimAll(store, later);
        assertThat(store.keyCount()).as("abandoned claims, swept out by later claims").isEqualTo(later.size());
    }

    // ---------------------------------------------------------------- the two tiers

    @Test
    void completionMovesTheKeyFromTheClaimMapToTheBoundedCache() {
        CaffeineDedupStore store = store(10);
        StoreKey key = new StoreKey("ns", "order-1");
        StoreKey released = new StoreKey("ns", "order-2");

        Acquired owner = (Acquired) claimOne(store, key);
        Acquired releasing = (Acquired) claimOne(store, released);
        assertThat(store.claimCount()).isEqualTo(2);
        assertThat(store.completedCount()).isZero();

        assertThat(store.complete(key, owner.token(), RETENTION)).isTrue();
        assertThat(store.release(released, releasing.token())).isTrue();
        assertThat(store.claimCount()).as("claims left in the claim map").isZero();
        assertThat(store.completedCount()).isEqualTo(1);

        assertThat(claimOne(store, key)).isEqualTo(new Duplicate(true));
        assertThat(store.complete(key, owner.token(), RETENTION)).as("a retried complete").isTrue();
        assertThat(store.claimCount()).as("a duplicate claim and a retried complete leave no claim").isZero();
    }

    @Test
    void claimWhoseLeaseAndRetentionRanOutIsSweptOutOfTheClaimMap() {
        ManualTicker ticker = new ManualTicker();
        CaffeineDedupStore store = new CaffeineDedupStore(10, 0, ticker);
        StoreKey abandoned = new StoreKey("ns", "abandoned");
        StoreKey remembered = new StoreKey("ns", "remembered");
        claimOne(store, abandoned);
        ticker.advance(LEASE.plus(CLAIM_RETENTION).minus(LEASE.dividedBy(2)));
        claimOne(store, remembered);
        // abandoned: lease and retention ran out; remembered: lease ran out, retention not yet.
        ticker.advance(LEASE.dividedBy(2).plus(LEASE));
        assertThat(store.claimCount()).as("forgotten lazily, not removed on the spot").isEqualTo(2);

        List<StoreKey> later = keys("later", CaffeineDedupStore.SWEEP_EVERY);
        claimAll(store, later);

        assertThat(store.claimCount()).as("the abandoned claim swept out, the remembered one kept")
                .isEqualTo(later.size() + 1);
        assertThat(claimOne(store, remembered)).as("still taken over from its attempts")
                .isInstanceOfSatisfying(Acquired.class, a -> assertThat(a.attempt()).isEqualTo(2));
        assertThat(claimOne(store, abandoned)).as("forgotten, so fresh")
                .isInstanceOfSatisfying(Acquired.class, a -> assertThat(a.attempt()).isEqualTo(1));
    }

    @Test
    void sweepsKeepPaceWithAGrowingClaimMap() {
        ManualTicker ticker = new ManualTicker();
        CaffeineDedupStore store = new CaffeineDedupStore(10, 0, ticker);
        // Rounds of abandoned claims, each forgotten before the next: the map never holds more than two
        // rounds' worth, whatever the number of rounds.
        int perRound = 3 * CaffeineDedupStore.SWEEP_EVERY;
        for (int round = 0; round < 5; round++) {
            claimAll(store, keys("round-" + round, perRound));
            ticker.advance(LEASE.plus(CLAIM_RETENTION));
            assertThat(store.claimCount()).as("claims after round %d", round).isLessThanOrEqualTo(2 * perRound);
        }
    }

    @Test
    void claimThatWasForgottenButNotYetSweptCountsAsAbsent() {
        ManualTicker ticker = new ManualTicker();
        CaffeineDedupStore store = new CaffeineDedupStore(10, 0, ticker);
        StoreKey key = new StoreKey("ns", "order-1");
        Acquired owner = (Acquired) claimOne(store, key);
        assertThat(store.recordStart(key, owner.token())).isEqualTo(1);

        ticker.advance(LEASE.plus(CLAIM_RETENTION));

        assertThat(store.inspect(key)).isEmpty();
        assertThat(store.stats()).isEqualTo(new StoreStats(0, 0, false));
        assertThat(store.recordStart(key, owner.token())).isZero();
        assertThat(store.renew(key, owner.token(), LEASE)).isFalse();
        assertThat(store.complete(key, owner.token(), RETENTION)).isFalse();
        assertThat(store.release(key, owner.token())).isFalse();
        assertThat(store.delete(key)).isFalse();
        assertThat(store.claimCount()).as("dropped by the first operation that met it").isZero();
        Acquired fresh = (Acquired) claimOne(store, key);
        assertThat(fresh.attempt()).isEqualTo(1);
        assertThat(store.recordStart(key, fresh.token())).isEqualTo(1);
    }

    @Test
    void claimsAreNeverEvictedBySizeBoundWhileCompletedKeysAre() {
        CaffeineDedupStore store = store(1);
        List<StoreKey> running = keys("running", 100);
        List<Acquired> runningOwners = claimAll(store, running);

        List<StoreKey> done = keys("done", 2_000);
        List<Acquired> owners = claimAll(store, done);
        for (int i = 0; i < done.size(); i++) {
            assertThat(store.complete(done.get(i), owners.get(i).token(), RETENTION)).isTrue();
        }

        assertThat(store.completedCount()).as("completed keys, held to the bound").isEqualTo(1);
        assertThat(store.claimCount()).as("claims, all kept").isEqualTo(running.size());
        for (int i = 0; i < running.size(); i++) {
            StoreKey key = running.get(i);
            assertThat(claimOne(store, key)).as("claim of %s", key.id()).isInstanceOf(InProgress.class);
            assertThat(store.complete(key, runningOwners.get(i).token(), RETENTION)).isTrue();
        }
        assertThat(store.completedCount()).isEqualTo(1);
        assertThat(store.claimCount()).isZero();
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void claimsAndInspectsRacingCompletionsNeverSeeTheKeyAbsent() throws Exception {
        CaffeineDedupStore store = store(1_000_000);
        List<StoreKey> keys = keys("raced", 5_000);
        List<Acquired> owners = claimAll(store, keys);
        Queue<String> unexpected = new ConcurrentLinkedQueue<>();
        AtomicBoolean completing = new AtomicBoolean(true);
        CyclicBarrier start = new CyclicBarrier(4);
        ExecutorService pool = Executors.newFixedThreadPool(4);
        try {
            List<Future<?>> running = new ArrayList<>();
            // Two completers, the owner's complete and its retry racing each other: both must succeed.
            for (int c = 0; c < 2; c++) {
                running.add(pool.submit(() -> {
                    start.await(30, TimeUnit.SECONDS);
                    for (int i = 0; i < keys.size(); i++) {
                        if (!store.complete(keys.get(i), owners.get(i).token(), RETENTION)) {
                            unexpected.add("complete of " + keys.get(i).id() + " answered false");
                        }
                    }
                    return null;
                }));
            }
            for (int o = 0; o < 2; o++) {
                int observer = o;
                running.add(pool.submit(() -> {
                    Random random = new Random(observer);
                    start.await(30, TimeUnit.SECONDS);
                    while (completing.get()) {
                        StoreKey key = keys.get(random.nextInt(keys.size()));
                        ClaimResult claimed = claimOne(store, key);
                        if (!(claimed instanceof InProgress) && !claimed.equals(new Duplicate(true))) {
                            unexpected.add("claim of " + key.id() + " answered " + claimed);
                        }
                        if (store.inspect(key).isEmpty()) {
                            unexpected.add("inspect of " + key.id() + " found nothing");
                        }
                    }
                    return null;
                }));
            }
            running.get(0).get(90, TimeUnit.SECONDS);
            running.get(1).get(90, TimeUnit.SECONDS);
            completing.set(false);
            for (Future<?> f : running) {
                f.get(90, TimeUnit.SECONDS);
            }
        } finally {
            pool.shutdownNow();
        }

        assertThat(unexpected).isEmpty();
        assertThat(store.claimCount()).isZero();
        assertThat(store.completedCount()).isEqualTo(keys.size());
    }

    @Test
    void durationsTooLongForNanosecondsAreCapped() {
        CaffeineDedupStore store = store(10);
        StoreKey key = new StoreKey("ns", "forever");
        Duration forever = Duration.ofSeconds(Long.MAX_VALUE);

        ClaimResult claimed = store.claim(List.of(new ClaimRequest(key, null, forever, forever))).get(0);
        assertThat(claimed).isInstanceOf(Acquired.class);
        assertThat(claimOne(store, key)).isInstanceOf(InProgress.class);
        assertThat(store.complete(key, ((Acquired) claimed).token(), forever)).isTrue();

        assertThat(claimOne(store, key)).isEqualTo(new Duplicate(true));
    }

    @Test
    void completeWithZeroRetentionForgetsKeyAtOnce() {
        CaffeineDedupStore store = store(10);
        StoreKey key = new StoreKey("ns", "order-1");
        Acquired owner = (Acquired) claimOne(store, key);

        assertThat(store.complete(key, owner.token(), Duration.ZERO)).isTrue();

        assertThat(claimOne(store, key)).isInstanceOfSatisfying(Acquired.class,
                a -> assertThat(a.attempt()).isEqualTo(1));
    }

    @Test
    void renewWithNonPositiveLeaseIsRejected() {
        CaffeineDedupStore store = store(10);
        StoreKey key = new StoreKey("ns", "order-1");
        Acquired owner = (Acquired) claimOne(store, key);

        assertThatThrownBy(() -> store.renew(key, owner.token(), Duration.ZERO))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage("lease must be positive: PT0S");
    }

    @Test
    void storeOnSystemTickerClaimsAndCompletes() {
        try (DedupStore store = PROVIDER.create(TestPluginConfig.defaults("store.caffeine", PROVIDER.configSpec()),
                StoreContext.system())) {
            StoreKey key = new StoreKey("ns", "order-1");
            Acquired owner = (Acquired) store.claim(List.of(request(key))).get(0);
            assertThat(store.complete(key, owner.token(), RETENTION)).isTrue();
            assertThat(store.claim(List.of(request(key)))).containsExactly(new Duplicate(true));
        }
    }

    @Test
    void claimNumbersAreUniqueAcrossThreads() throws Exception {
        CaffeineDedupStore.ClaimNumbers numbers = new CaffeineDedupStore.ClaimNumbers();
        int threads = 8;
        int perThread = 5_000;
        long[][] seen = new long[threads][perThread];
        List<Thread> started = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int thread = t;
            Thread runner = new Thread(() -> {
                for (int i = 0; i < perThread; i++) {
                    seen[thread][i] = numbers.next();
                }
            });
            runner.start();
            started.add(runner);
        }
        for (Thread runner : started) {
            runner.join();
        }

        assertThat(Arrays.stream(seen).flatMapToLong(Arrays::stream).distinct().count())
                .isEqualTo((long) threads * perThread);
    }

    private static CaffeineDedupStore store(long maximumSize) {
        return (CaffeineDedupStore) PROVIDER.create(
                TestPluginConfig.defaults("store.caffeine", PROVIDER.configSpec()).with("maximum-size", maximumSize),
                new StoreContext(new ManualTicker()));
    }

    private static List<StoreKey> keys(String prefix, int count) {
        List<StoreKey> keys = new ArrayList<>();
        for (int i = 0; i < count; i++) {
            keys.add(new StoreKey("ns", prefix + "-" + i));
        }
        return keys;
    }

    private static ClaimRequest request(StoreKey key) {
        return new ClaimRequest(key, null, LEASE, CLAIM_RETENTION);
    }

    private static ClaimResult claimOne(DedupStore store, StoreKey key) {
        return store.claim(List.of(request(key))).get(0);
    }

    private static List<Acquired> claimAll(DedupStore store, List<StoreKey> keys) {
        List<Acquired> owners = new ArrayList<>();
        for (StoreKey key : keys) {
            ClaimResult result = claimOne(store, key);
            assertThat(result).as("claim of %s", key.id()).isInstanceOf(Acquired.class);
            owners.add((Acquired) result);
        }
        return owners;
    }
}
