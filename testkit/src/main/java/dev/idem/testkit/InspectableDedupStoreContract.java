package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.DedupStore;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.spi.StoredKey;
import dev.idem.spi.StoredKey.State;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The contract of an {@link InspectableDedupStore}: the whole {@link DedupStoreContract}, plus
 * {@code inspect}, {@code delete} and {@code stats}. A store's test extends it instead of
 * {@link DedupStoreContract} and makes its store in {@link #createInspectableStore} instead of
 * {@code createStore}; every other hook ({@link #advanceStoreClock}, {@link #clockResolution()}) is the
 * same:
 *
 * <pre>{@code
 * class CaffeineDedupStoreTest extends InspectableDedupStoreContract {
 *     private final DedupStoreProvider provider = new CaffeineDedupStoreProvider();
 *
 *     @Override
 *     protected InspectableDedupStore createInspectableStore(ManualTicker ticker) {
 *         return (InspectableDedupStore) provider.create(
 *                 TestPluginConfig.defaults("store.caffeine", provider.configSpec()), new StoreContext(ticker));
 *     }
 * }
 * }</pre>
 *
 * <h2>What it checks</h2>
 * An absent key, and a claim or completion whose time ran out, inspect as empty; a claimed key shows its
 * attempts, fingerprint and lease end, a completed one its retention end, both as wall-clock instants
 * that move with the store's clock; {@code delete} makes a completed key claimable afresh, fences out a
 * live owner (its {@code complete}, {@code renew} and {@code release} answer {@code false}) and forgets
 * an expired claim's attempts; {@code stats} counts exactly what the test left, across namespaces.
 *
 * <p>{@code expiresAt} is checked against this host's clock, to within {@link #clockResolution()}: a
 * store with a server clock must run on this host's clock or convert as the SPI says (time left on its
 * clock, added to this host's).
 *
 * <h2>Isolation</h2>
 * {@code stats} counts every key of a store, so each test needs a store that holds none but its own:
 * a new in-memory store, or a key prefix or table of its own per test.
 *
 * <p>An operator's {@code delete} lets a second owner acquire a key without a release, which the base
 * contract's invariant checks would rightly report; so what follows a delete runs on
 * {@link #inspectable()}, the store as created, outside those checks.
 */
public abstract class InspectableDedupStoreContract extends DedupStoreContract {

    private InspectableDedupStore inspectable;

    /**
     * Makes the store under test; called before each test, as {@code createStore} is for
     * {@link DedupStoreContract}, with the same ticker rules. The store must hold no keys but this
     * test's (see "Isolation" above). A test that needs a further store calls this method directly.
     */
    protected abstract InspectableDedupStore createInspectableStore(ManualTicker ticker);

    /** Calls {@link #createInspectableStore}; final so the contract knows the store it inspects. */
    @Override
    protected final DedupStore createStore(ManualTicker ticker) {
        inspectable = createInspectableStore(ticker);
        return inspectable;
    }

    /** The store under test as created, without the base contract's call recording. */
    protected final InspectableDedupStore inspectable() {
        return inspectable;
    }

    // ---------------------------------------------------------------- inspect

    @Test
    void absentKeyInspectsAsEmpty() {
        StoreKey elsewhere = new StoreKey(namespace() + "-other", "order-1");
        acquire(elsewhere, null);

        assertThat(inspectable().inspect(key("never-claimed"))).isEmpty();
        assertThat(inspectable().inspect(key("order-1"))).as("the same id in another namespace").isEmpty();
    }

    @Test
    void claimedKeyShowsAttemptsFingerprintAndLeaseEnd() {
        StoreKey key = key("order-1");
        Instant before = Instant.now();
        acquire(key, "sha256:aa");

        StoredKey seen = inspect(key);
        assertThat(seen.state()).isEqualTo(State.CLAIMED);
        assertThat(seen.attempts()).isEqualTo(1);
        assertThat(seen.fingerprint()).isEqualTo("sha256:aa");
        assertExpiresWithin(seen, before, LEASE);

        Duration elapsed = LEASE.dividedBy(3);
        advance(elapsed);
        assertExpiresWithin(inspect(key), before, LEASE.minus(elapsed));
    }

    @Test
    void takenOverKeyShowsTheNextAttemptAndTheNewOwnersFingerprint() {
        StoreKey key = key("order-1");
        acquire(key, "sha256:aa");
        advance(LEASE);

        Instant before = Instant.now();
        acquire(key, "sha256:bb");

        StoredKey seen = inspect(key);
        assertThat(seen.state()).isEqualTo(State.CLAIMED);
        assertThat(seen.attempts()).isEqualTo(2);
        assertThat(seen.fingerprint()).isEqualTo("sha256:bb");
        assertExpiresWithin(seen, before, LEASE);
    }

    @Test
    void completedKeyShowsRetentionEnd() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key, "sha256:aa");
        Instant before = Instant.now();
        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();

        StoredKey seen = inspect(key);
        assertThat(seen.state()).isEqualTo(State.COMPLETED);
        assertThat(seen.attempts()).isEqualTo(1);
        assertThat(seen.fingerprint()).isEqualTo("sha256:aa");
        assertExpiresWithin(seen, before, RETENTION);
    }

    @Test
    void keyWithoutFingerprintShowsNull() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key, null);
        assertThat(inspect(key).fingerprint()).isNull();

        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();
        assertThat(inspect(key).fingerprint()).isNull();
    }

    @Test
    void claimWhoseLeaseRanOutInspectsAsEmpty() {
        StoreKey key = key("order-1");
        acquire(key, null);

        advance(LEASE.minus(clockResolution()));
        assertThat(inspectable().inspect(key)).as("just before the lease ends").isPresent();

        advance(clockResolution());
        assertThat(inspectable().inspect(key)).as("once the lease ended").isEmpty();
        assertThat(acquire(key, null).attempt()).as("still remembered for its attempts").isEqualTo(2);
    }

    @Test
    void completionWhoseRetentionRanOutInspectsAsEmpty() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key, null);
        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();

        advance(RETENTION.minus(clockResolution()));
        assertThat(inspectable().inspect(key)).as("just before the retention ends").isPresent();

        advance(clockResolution());
        assertThat(inspectable().inspect(key)).as("once the retention ended").isEmpty();
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.idem.testkit.DedupStoreContract#unusualIds")
    void keyWithAnyTextIsInspectedAndDeletedExactly(String description, String id) {
        StoreKey key = key(id);
        StoreKey shorter = key(id.substring(0, id.offsetByCodePoints(id.length(), -1)));
        Acquired owner = acquire(key, null);
        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();

        assertThat(inspect(key).state()).isEqualTo(State.COMPLETED);
        assertThat(inspectable().inspect(shorter)).as("the key without its last character").isEmpty();
        assertThat(inspectable().delete(shorter)).as("delete of the key without its last character").isFalse();
        assertThat(inspectable().delete(key)).isTrue();
        assertThat(inspectable().inspect(key)).isEmpty();
    }

    // ---------------------------------------------------------------- delete

    @Test
    void deletedCompletedKeyIsAcquiredAfreshByTheNextClaim() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key, null);
        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();

        assertThat(inspectable().delete(key)).isTrue();

        assertThat(inspectable().inspect(key)).isEmpty();
        ClaimResult again = claimOutsideChecks(key);
        assertThat(again).isInstanceOfSatisfying(Acquired.class, a -> assertThat(a.attempt()).isEqualTo(1));
        assertThat(inspectable().complete(key, ((Acquired) again).token(), RETENTION)).isTrue();
        assertThat(claimOutsideChecks(key)).isEqualTo(new Duplicate(true));
    }

    @Test
    void deletedLiveClaimFencesOutItsOwnerAsALostLease() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key, null);

        assertThat(inspectable().delete(key)).isTrue();

        assertThat(store().renew(key, owner.token(), LEASE)).as("the owner's renew").isFalse();
        assertThat(store().complete(key, owner.token(), RETENTION)).as("the owner's complete").isFalse();
        assertThat(store().release(key, owner.token())).as("the owner's release").isFalse();
        assertThat(inspectable().inspect(key)).as("nothing written back by the fenced-out owner").isEmpty();
        ClaimResult again = claimOutsideChecks(key);
        assertThat(again).isInstanceOfSatisfying(Acquired.class, a -> assertThat(a.attempt()).isEqualTo(1));
        assertThat(store().complete(key, owner.token(), RETENTION)).as("the old owner against the new one").isFalse();
    }

    @Test
    void deleteOfAbsentKeyAnswersFalse() {
        assertThat(inspectable().delete(key("never-claimed"))).isFalse();
    }

    @Test
    void deleteOfClaimWhoseLeaseRanOutAnswersFalseAndForgetsItsAttempts() {
        StoreKey key = key("order-1");
        acquire(key, null);
        advance(LEASE);

        assertThat(inspectable().delete(key)).isFalse();

        assertThat(acquire(key, null).attempt()).as("a fresh claim, not a takeover").isEqualTo(1);
    }

    // ---------------------------------------------------------------- stats

    @Test
    void statsOfAStoreWithoutKeysAreZero() {
        assertThat(inspectable().stats()).isEqualTo(new StoreStats(0, 0, false));
    }

    @Test
    void statsCountLiveClaimsAndCompletionsAcrossNamespaces() {
        List<Acquired> owners = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            owners.add(acquire(key("order-" + i), null));
        }
        Acquired other = acquire(new StoreKey(namespace() + "-other", "order-0"), null);
        assertThat(store().complete(key("order-0"), owners.get(0).token(), RETENTION)).isTrue();
        assertThat(store().complete(key("order-1"), owners.get(1).token(), RETENTION)).isTrue();
        assertThat(store().release(key("order-2"), owners.get(2).token())).isTrue();
        assertThat(inspectable().delete(key("order-3"))).isTrue();

        assertThat(inspectable().stats()).as("order-4 and the other namespace's claim; order-0 and order-1")
                .isEqualTo(new StoreStats(2, 2, false));

        advance(LEASE);
        assertThat(inspectable().stats()).as("once the leases ended").isEqualTo(new StoreStats(0, 2, false));
        assertThat(other.attempt()).isEqualTo(1);

        advance(RETENTION);
        assertThat(inspectable().stats()).as("once the retention ended").isEqualTo(new StoreStats(0, 0, false));
    }

    // ---------------------------------------------------------------- helpers

    private Acquired acquire(StoreKey key, String fingerprint) {
        ClaimResult result = store().claim(List.of(new ClaimRequest(key, fingerprint, LEASE, CLAIM_RETENTION))).get(0);
        assertThat(result).as("claim of %s", key).isInstanceOf(Acquired.class);
        return (Acquired) result;
    }

    private ClaimResult claimOutsideChecks(StoreKey key) {
        List<ClaimResult> results = inspectable().claim(List.of(new ClaimRequest(key, null, LEASE, CLAIM_RETENTION)));
        assertThat(results).hasSize(1);
        return results.get(0);
    }

    private StoredKey inspect(StoreKey key) {
        Optional<StoredKey> seen = inspectable().inspect(key);
        assertThat(seen).as("inspect of %s", key).isPresent();
        return seen.get();
    }

    /**
     * Asserts that {@code seen} ends {@code left} after a moment between {@code before} and now, as
     * this host's clock reads, give or take {@link #clockResolution()}.
     */
    private void assertExpiresWithin(StoredKey seen, Instant before, Duration left) {
        Instant after = Instant.now();
        assertThat(seen.expiresAt()).as("expiresAt of %s", seen)
                .isBetween(before.plus(left).minus(clockResolution()), after.plus(left).plus(clockResolution()));
    }
}
