package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.StepStore;
import dev.idem.spi.StoreKey;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.UUID;
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

/**
 * The contract of a {@link StepStore}: the durable steps of docs/design.md ("Durable steps") as JUnit 5 tests. It runs
 * beside {@link DedupStoreContract}, not instead of it: a second test class of the store extends this one and says how
 * to make the store:
 *
 * <pre>{@code
 * class CaffeineStepStoreTest extends StepStoreContract {
 *     private final DedupStoreProvider provider = new CaffeineDedupStoreProvider();
 *
 *     @Override
 *     protected StepStore createStore(ManualTicker ticker) {
 *         return (StepStore) provider.create(
 *                 TestPluginConfig.defaults("store.caffeine", provider.configSpec()), new StoreContext(ticker));
 *     }
 * }
 * }</pre>
 *
 * <h2>What it checks</h2>
 * <b>Fencing:</b> only the owner of a key's claim reads and records its steps, whether its lease still runs or ran
 * out while nobody took the key over; another token, an absent key, a completed key and a released claim's former
 * owner get nothing. A takeover sees every step recorded before it, and the owner it took the key from can record
 * no step after it, neither a new one nor over one the new owner recorded; a record racing a takeover is either seen
 * by it or refused, never lost in between. <b>Lifetime:</b> steps survive a takeover and a release (the next claim
 * finds them), and are never seen by a claim that acquires the key afresh after its completion or its abandoned claim
 * was forgotten, nor after an operator's {@code delete} or {@code purge} of the key (for a store that is also an
 * {@link InspectableDedupStore}). <b>Values:</b> every byte value, an empty value, one of
 * {@value StepStore#MAX_VALUE_BYTES} bytes, names of any text up to {@value StepStore#MAX_NAME_BYTES} bytes, and
 * keys of any text are kept exactly; steps of two keys, of two namespaces, and of two names are independent; a
 * record replaces a step of the same name; a name too long or blank is refused.
 *
 * <h2>Time and isolation</h2>
 * As for {@link DedupStoreContract}: no test sleeps; {@link #advance(Duration)} calls
 * {@link #advanceStoreClock(Duration)}, which a store on a server clock overrides to move its stored deadlines (the
 * steps' as well as the keys') back, and such a store overrides {@link #clockResolution()} too. Each test gets a new
 * store and a namespace of its own ({@link #namespace()}).
 */
public abstract class StepStoreContract {

    /** The lease every claim of the suite asks for. */
    protected static final Duration LEASE = Duration.ofSeconds(30);

    /** How long a claim is remembered after its lease: the retention a step is kept for. */
    protected static final Duration CLAIM_RETENTION = Duration.ofMinutes(5);

    /** How long a completed key is remembered: longer than {@link #CLAIM_RETENTION}, as the runtime never asks. */
    protected static final Duration RETENTION = Duration.ofHours(1);

    private static final int RACES = 40;

    private ManualTicker ticker;
    private StepStore store;
    private String namespace;

    /**
     * Makes the store under test; called before each test, with the ticker rules of
     * {@link DedupStoreContract#createStore}.
     */
    protected abstract StepStore createStore(ManualTicker ticker);

    /**
     * Makes {@code duration} pass on the store's clock; default: advances the ticker. A store on a server clock moves
     * every stored deadline of this test's namespace back instead, its steps' included.
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

    protected final StepStore store() {
        return store;
    }

    protected final ManualTicker ticker() {
        return ticker;
    }

    /** This test's namespace; every key of the suite has a namespace starting with it. */
    protected final String namespace() {
        return namespace;
    }

    protected final StoreKey key(String id) {
        return new StoreKey(namespace, id);
    }

    @BeforeEach
    protected final void createStoreForTest(TestInfo test) {
        String method = test.getTestMethod().map(m -> m.getName()).orElse("test");
        if (method.length() > 40) {
            method = method.substring(0, 40);
        }
        namespace = "steps-" + method + "-" + UUID.randomUUID().toString().substring(0, 8);
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

    // ---------------------------------------------------------------- the owner

    @Test
    void freshClaimHasNoStep() {
        Acquired owner = acquire(key("order-1"));

        assertThat(store.steps(key("order-1"), owner.token())).hasValueSatisfying(steps -> assertThat(steps).isEmpty());
    }

    @Test
    void ownerReadsBackWhatItRecordedByteForByte() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        byte[] everyByte = new byte[256];
        for (int i = 0; i < everyByte.length; i++) {
            everyByte[i] = (byte) i;
        }

        assertThat(store.recordStep(key, owner.token(), "charge", utf8("{\"id\":\"ch_1\"}"))).isTrue();
        assertThat(store.recordStep(key, owner.token(), "bytes", everyByte)).isTrue();
        assertThat(store.recordStep(key, owner.token(), "empty", new byte[0])).isTrue();

        Map<String, byte[]> steps = stepsOf(key, owner);
        assertThat(steps).containsOnlyKeys("charge", "bytes", "empty");
        assertThat(steps.get("charge")).isEqualTo(utf8("{\"id\":\"ch_1\"}"));
        assertThat(steps.get("bytes")).isEqualTo(everyByte);
        assertThat(steps.get("empty")).isEmpty();
    }

    @Test
    void recordReplacesAStepOfTheSameName() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(store.recordStep(key, owner.token(), "charge", utf8("first"))).isTrue();

        assertThat(store.recordStep(key, owner.token(), "charge", utf8("second"))).isTrue();

        assertThat(stepsOf(key, owner)).containsOnlyKeys("charge");
        assertThat(stepsOf(key, owner).get("charge")).isEqualTo(utf8("second"));
    }

    @Test
    void valueOfTheLargestSizeAndNamesOfAnyTextAreKeptExactly() {
        StoreKey key = key("order-\u00e9\u4e2d\ud83d\ude00 \"'\\:{}|\n");
        Acquired owner = acquire(key);
        byte[] large = new byte[StepStore.MAX_VALUE_BYTES];
        for (int i = 0; i < large.length; i++) {
            large[i] = (byte) (i * 31 + 7);
        }
        String longest = "\u00e9".repeat(StepStore.MAX_NAME_BYTES / 2) + "x";
        List<String> names = List.of("Charge", "charge", "charge ", "\u00e9t\u00e9 \ud83d\ude00", "a|b:c{d}", longest);

        assertThat(store.recordStep(key, owner.token(), "large", large)).isTrue();
        for (String name : names) {
            assertThat(store.recordStep(key, owner.token(), name, utf8(name))).as("name '%s'", name).isTrue();
        }

        Map<String, byte[]> steps = stepsOf(key, owner);
        assertThat(steps.get("large")).isEqualTo(large);
        for (String name : names) {
            assertThat(steps.get(name)).as("name '%s'", name).isEqualTo(utf8(name));
        }
        assertThat(steps).hasSize(names.size() + 1);
    }

    @Test
    void nameTooLongOrBlankIsRefused() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);

        assertThatThrownBy(() -> store.recordStep(key, owner.token(), "x".repeat(StepStore.MAX_NAME_BYTES + 1),
                utf8("v"))).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> store.recordStep(key, owner.token(), " ", utf8("v")))
                .isInstanceOf(IllegalArgumentException.class);
        assertThat(stepsOf(key, owner)).isEmpty();
    }

    @Test
    void stepsOfTwoKeysAndTwoNamespacesAreIndependent() {
        StoreKey a = key("order-a");
        StoreKey b = key("order-b");
        StoreKey elsewhere = new StoreKey(namespace + "-other", "order-a");
        Acquired ownerA = acquire(a);
        Acquired ownerB = acquire(b);
        Acquired ownerElsewhere = acquire(elsewhere);

        assertThat(store.recordStep(a, ownerA.token(), "charge", utf8("a"))).isTrue();
        assertThat(store.recordStep(elsewhere, ownerElsewhere.token(), "charge", utf8("elsewhere"))).isTrue();

        assertThat(stepsOf(a, ownerA).get("charge")).isEqualTo(utf8("a"));
        assertThat(stepsOf(b, ownerB)).isEmpty();
        assertThat(stepsOf(elsewhere, ownerElsewhere).get("charge")).isEqualTo(utf8("elsewhere"));
    }

    @Test
    void ownerWhoseLeaseRanOutStillRecordsWhileNobodyTookTheKeyOver() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        advance(LEASE.plus(clockResolution()));

        assertThat(store.recordStep(key, owner.token(), "charge", utf8("late"))).isTrue();
        assertThat(stepsOf(key, owner)).containsOnlyKeys("charge");
    }

    // ---------------------------------------------------------------- fencing

    @Test
    void anotherTokenNeitherReadsNorRecords() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(store.recordStep(key, owner.token(), "charge", utf8("mine"))).isTrue();

        assertThat(store.steps(key, owner.token() + 1)).isEmpty();
        assertThat(store.recordStep(key, owner.token() + 1, "charge", utf8("theirs"))).isFalse();
        assertThat(store.recordStep(key, owner.token() - 1, "refund", utf8("theirs"))).isFalse();

        assertThat(stepsOf(key, owner)).containsOnlyKeys("charge");
        assertThat(stepsOf(key, owner).get("charge")).isEqualTo(utf8("mine"));
    }

    @Test
    void absentKeyHasNoOwnerAndARecordLeavesNothingBehind() {
        StoreKey key = key("never-claimed");

        assertThat(store.steps(key, 42)).isEmpty();
        assertThat(store.recordStep(key, 42, "charge", utf8("v"))).isFalse();

        Acquired owner = acquire(key);
        assertThat(owner.attempt()).isEqualTo(1);
        assertThat(stepsOf(key, owner)).isEmpty();
    }

    @Test
    void takeoverSeesTheStepsRecordedBeforeIt() {
        StoreKey key = key("order-1");
        Acquired crashed = acquire(key);
        assertThat(store.recordStep(key, crashed.token(), "charge", utf8("ch_1"))).isTrue();
        advance(LEASE.plus(clockResolution()));

        Acquired owner = acquire(key);

        assertThat(owner.attempt()).as("a takeover").isEqualTo(2);
        assertThat(stepsOf(key, owner)).containsOnlyKeys("charge");
        assertThat(stepsOf(key, owner).get("charge")).isEqualTo(utf8("ch_1"));
    }

    @Test
    void ownerWhoseKeyWasTakenOverRecordsNothingNeitherNewNorOverTheNewOwners() {
        StoreKey key = key("order-1");
        Acquired stale = acquire(key);
        advance(LEASE.plus(clockResolution()));
        Acquired owner = acquire(key);
        assertThat(store.recordStep(key, owner.token(), "charge", utf8("new owner's"))).isTrue();

        assertThat(store.recordStep(key, stale.token(), "charge", utf8("stale owner's"))).isFalse();
        assertThat(store.recordStep(key, stale.token(), "refund", utf8("stale owner's"))).isFalse();
        assertThat(store.steps(key, stale.token())).as("the stale owner reads nothing either").isEmpty();

        assertThat(stepsOf(key, owner)).containsOnlyKeys("charge");
        assertThat(stepsOf(key, owner).get("charge")).isEqualTo(utf8("new owner's"));
    }

    @Test
    void completedKeyHasNoOwnerForSteps() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(store.recordStep(key, owner.token(), "charge", utf8("ch_1"))).isTrue();
        assertThat(store.complete(key, owner.token(), RETENTION)).isTrue();

        assertThat(store.steps(key, owner.token())).isEmpty();
        assertThat(store.recordStep(key, owner.token(), "refund", utf8("late"))).isFalse();
    }

    /** What the new owner of a raced key did: whether its first read saw the stale owner's step. */
    private record Takeover(Acquired owner, boolean sawTheStaleStep) {
    }

    /**
     * Each stale owner records a step while another consumer takes its key over, which then does what the runtime
     * does: reads the steps, and records its own only if the name is not there. A record the store accepts must be one
     * the takeover's read saw (and the step keeps the stale owner's value); a record it refuses must have left nothing
     * (and the step is the new owner's). A store that checks the token, then writes without holding off the takeover,
     * accepts a record the new owner never saw, and its late write lands over the new owner's.
     */
    @Test
    @Timeout(120)
    void recordRacingATakeoverIsEitherSeenByItOrRefused() throws Exception {
        List<StoreKey> keys = new ArrayList<>();
        List<Acquired> crashed = new ArrayList<>();
        for (int i = 0; i < RACES; i++) {
            StoreKey key = key("race-" + i);
            keys.add(key);
            crashed.add(acquire(key));
        }
        advance(LEASE.plus(clockResolution()));
        ExecutorService threads = Executors.newFixedThreadPool(2 * RACES);
        try {
            CyclicBarrier start = new CyclicBarrier(2 * RACES);
            List<Future<Boolean>> records = new ArrayList<>();
            List<Future<Takeover>> takeovers = new ArrayList<>();
            for (int i = 0; i < RACES; i++) {
                StoreKey key = keys.get(i);
                long stale = crashed.get(i).token();
                records.add(threads.submit(() -> {
                    start.await();
                    return store.recordStep(key, stale, "charge", utf8("stale"));
                }));
                takeovers.add(threads.submit(() -> {
                    start.await();
                    ClaimResult claimed = store.claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION)))
                            .get(0);
                    assertThat(claimed).as("the takeover of %s", key.id()).isInstanceOf(Acquired.class);
                    Acquired owner = (Acquired) claimed;
                    boolean seen = store.steps(key, owner.token()).orElseThrow().containsKey("charge");
                    if (!seen) {
                        assertThat(store.recordStep(key, owner.token(), "charge", utf8("new"))).isTrue();
                    }
                    return new Takeover(owner, seen);
                }));
            }
            for (int i = 0; i < RACES; i++) {
                boolean recorded = records.get(i).get(60, TimeUnit.SECONDS);
                Takeover takeover = takeovers.get(i).get(60, TimeUnit.SECONDS);
                String id = keys.get(i).id();
                assertThat(takeover.sawTheStaleStep()).as("%s: the stale record was %s, so the takeover %s it", id,
                        recorded ? "accepted" : "refused", recorded ? "saw" : "did not see").isEqualTo(recorded);
                assertThat(stepsOf(keys.get(i), takeover.owner()).get("charge")).as("%s: the step kept", id)
                        .isEqualTo(utf8(recorded ? "stale" : "new"));
            }
        } finally {
            threads.shutdownNow();
        }
    }

    // ---------------------------------------------------------------- lifetime

    @Test
    void releasedKeyKeepsItsStepsForTheNextClaimAndItsFormerOwnerRecordsNoMore() {
        StoreKey key = key("order-1");
        Acquired released = acquire(key);
        assertThat(store.recordStep(key, released.token(), "charge", utf8("ch_1"))).isTrue();
        assertThat(store.release(key, released.token())).isTrue();

        assertThat(store.recordStep(key, released.token(), "refund", utf8("late"))).isFalse();
        Acquired next = acquire(key);

        assertThat(next.attempt()).isEqualTo(1);
        assertThat(stepsOf(key, next)).containsOnlyKeys("charge");
        assertThat(stepsOf(key, next).get("charge")).isEqualTo(utf8("ch_1"));
    }

    @Test
    void stepsOfACompletedKeyAreNeverSeenOnceItsRetentionPassedAndItIsClaimedAfresh() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(store.recordStep(key, owner.token(), "charge", utf8("ch_1"))).isTrue();
        // Completed with the claim's own retention, as the runtime does: the tightest case.
        assertThat(store.complete(key, owner.token(), CLAIM_RETENTION)).isTrue();
        advance(CLAIM_RETENTION.plus(clockResolution()));

        Acquired fresh = acquire(key);

        assertThat(fresh.attempt()).as("claimed afresh").isEqualTo(1);
        assertThat(stepsOf(key, fresh)).as("the steps of the key's earlier life").isEmpty();
    }

    @Test
    void stepsOfAnAbandonedClaimAreNeverSeenOnceItIsForgottenAndTheKeyClaimedAfresh() {
        StoreKey key = key("order-1");
        Acquired crashed = acquire(key);
        assertThat(store.recordStep(key, crashed.token(), "charge", utf8("ch_1"))).isTrue();
        advance(LEASE.plus(CLAIM_RETENTION).plus(clockResolution()));

        Acquired fresh = acquire(key);

        assertThat(fresh.attempt()).as("claimed afresh").isEqualTo(1);
        assertThat(stepsOf(key, fresh)).isEmpty();
    }

    @Test
    void stepRecordedAfterTheLeaseRanOutIsForgottenWithTheAbandonedClaim() {
        StoreKey key = key("order-1");
        Acquired late = acquire(key);
        advance(LEASE.plus(CLAIM_RETENTION.dividedBy(2)));
        assertThat(store.recordStep(key, late.token(), "charge", utf8("ch_1"))).isTrue();
        advance(CLAIM_RETENTION.dividedBy(2).plus(clockResolution()));

        Acquired fresh = acquire(key);

        assertThat(fresh.attempt()).as("claimed afresh").isEqualTo(1);
        assertThat(stepsOf(key, fresh)).isEmpty();
    }

    @Test
    void stepsOfAKeyStillInFlightAreKeptForTheClaimRetentionAfterTheyWereRecorded() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(store.recordStep(key, owner.token(), "charge", utf8("ch_1"))).isTrue();
        assertThat(store.renew(key, owner.token(), LEASE.plus(CLAIM_RETENTION))).isTrue();
        advance(CLAIM_RETENTION.minus(clockResolution().multipliedBy(2)));

        assertThat(stepsOf(key, owner)).as("within the claim retention").containsOnlyKeys("charge");
    }

    @Test
    void deleteForgetsTheKeysSteps() {
        if (!(store instanceof InspectableDedupStore inspectable)) {
            return;
        }
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(store.recordStep(key, owner.token(), "charge", utf8("ch_1"))).isTrue();

        assertThat(inspectable.delete(key)).isTrue();

        Acquired fresh = acquire(key);
        assertThat(fresh.attempt()).isEqualTo(1);
        assertThat(stepsOf(key, fresh)).isEmpty();
    }

    @Test
    void purgeForgetsThePurgedKeysSteps() {
        if (!(store instanceof InspectableDedupStore inspectable)) {
            return;
        }
        StoreKey key = key("order-1");
        Acquired owner = acquire(key);
        assertThat(store.recordStep(key, owner.token(), "charge", utf8("ch_1"))).isTrue();
        assertThat(store.complete(key, owner.token(), RETENTION)).isTrue();

        String cursor = null;
        long deleted = 0;
        do {
            var batch = inspectable.purge(namespace, Instant.now().plus(RETENTION).plus(Duration.ofMinutes(1)), cursor,
                    100);
            deleted += batch.deleted();
            cursor = batch.cursor();
        } while (cursor != null);

        assertThat(deleted).isEqualTo(1);
        Acquired fresh = acquire(key);
        assertThat(fresh.attempt()).isEqualTo(1);
        assertThat(stepsOf(key, fresh)).isEmpty();
    }

    // ---------------------------------------------------------------- helpers

    /** Claims {@code key}, which must be acquired. */
    protected final Acquired acquire(StoreKey key) {
        ClaimResult result = store.claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION))).get(0);
        assertThat(result).as("claim of %s", key.id()).isInstanceOf(Acquired.class);
        return (Acquired) result;
    }

    /** The owner's steps of {@code key}, which the owner must be able to read. */
    protected final Map<String, byte[]> stepsOf(StoreKey key, Acquired owner) {
        Optional<Map<String, byte[]>> steps = store.steps(key, owner.token());
        assertThat(steps).as("the steps of %s for its owner", key.id()).isPresent();
        return steps.get();
    }

    protected static byte[] utf8(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
