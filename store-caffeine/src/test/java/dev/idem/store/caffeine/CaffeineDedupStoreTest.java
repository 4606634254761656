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
import dev.idem.testkit.InspectableDedupStoreContract;
import dev.idem.testkit.ManualTicker;
import dev.idem.testkit.TestPluginConfig;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

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

        assertThat(store.keyCount()).isZero();
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
    void tokensAreUniqueAcrossThreads() throws Exception {
        CaffeineDedupStore.Tokens tokens = new CaffeineDedupStore.Tokens();
        int threads = 8;
        int perThread = 5_000;
        long[][] seen = new long[threads][perThread];
        List<Thread> started = new ArrayList<>();
        for (int t = 0; t < threads; t++) {
            int thread = t;
            Thread runner = new Thread(() -> {
                for (int i = 0; i < perThread; i++) {
                    seen[thread][i] = tokens.next();
                }
            });
            runner.start();
            started.add(runner);
        }
        for (Thread runner : started) {
            runner.join();
        }

        assertThat(java.util.Arrays.stream(seen).flatMapToLong(java.util.Arrays::stream).distinct().count())
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
