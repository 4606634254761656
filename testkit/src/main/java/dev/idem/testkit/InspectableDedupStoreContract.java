package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.DedupStore;
import dev.idem.spi.InspectableDedupStore;
import dev.idem.spi.KeyFilter;
import dev.idem.spi.KeyPage;
import dev.idem.spi.ListedKey;
import dev.idem.spi.PurgeBatch;
import dev.idem.spi.StoreKey;
import dev.idem.spi.StoreStats;
import dev.idem.spi.StoredKey;
import dev.idem.spi.StoredKey.State;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * The contract of an {@link InspectableDedupStore}: the whole {@link DedupStoreContract}, plus
 * {@code inspect}, {@code delete}, {@code stats}, {@code list} and {@code purge}. A store's test extends it instead of
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
 * attempts, fingerprint, lease end and recorded starts (kept across a takeover), a completed one its retention
 * end and no starts, both as wall-clock instants
 * that move with the store's clock; {@code delete} makes a completed key claimable afresh, fences out a
 * live owner (its {@code complete}, {@code renew} and {@code release} answer {@code false}) and forgets
 * an expired claim's attempts; {@code stats} counts exactly what the test left, across namespaces.
 * {@code list} pages through a namespace (more keys than the page's limit; each key exactly once, also while
 * other keys are written between pages; never a key of another namespace, a released key or a claim whose lease
 * ran out), shows each key as {@code inspect} does, filters by state and by an ID prefix taken literally, and
 * lists keys holding any text exactly. {@code purge} deletes the completed keys of its namespace whose retention
 * ends before the time given, and nothing else (no younger key, no claimed key whether its lease runs or ran
 * out, no key of another namespace), at most its limit per call, and a purged key is acquired afresh.
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
    void claimShowsItsRecordedStartsAndItsCompletionNone() {
        StoreKey key = key("order-1");
        Acquired owner = acquire(key, null);
        assertThat(inspect(key).starts()).as("a claim without recorded starts").isZero();
        assertThat(store().recordStart(key, owner.token())).isEqualTo(1);
        assertThat(store().recordStart(key, owner.token())).isEqualTo(2);

        assertThat(inspect(key).starts()).as("inspected after two starts").isEqualTo(2);
        assertThat(byId(listAll(KeyFilter.ALL, 10)).get("order-1").starts()).as("listed after two starts").isEqualTo(2);

        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();
        assertThat(inspect(key).starts()).as("inspected once completed").isZero();
        assertThat(byId(listAll(KeyFilter.ALL, 10)).get("order-1").starts()).as("listed once completed").isZero();
    }

    @Test
    void takenOverClaimShowsTheStartsRecordedBeforeTheTakeover() {
        StoreKey key = key("order-1");
        Acquired first = acquire(key, null);
        assertThat(store().recordStart(key, first.token())).isEqualTo(1);
        advance(LEASE);
        acquire(key, null);

        assertThat(inspect(key).starts()).isEqualTo(1);
        assertThat(byId(listAll(KeyFilter.ALL, 10)).get("order-1").starts()).isEqualTo(1);
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

    // ---------------------------------------------------------------- list

    @Test
    void listPagesThroughMoreKeysThanItsLimitListingEachKeyExactlyOnce() {
        Map<String, State> expected = new HashMap<>();
        for (int i = 0; i < 23; i++) {
            Acquired owner = acquire(key("order-" + i), "sha256:" + i);
            if (i % 2 == 0) {
                assertThat(store().complete(key("order-" + i), owner.token(), RETENTION)).isTrue();
                expected.put("order-" + i, State.COMPLETED);
            } else {
                expected.put("order-" + i, State.CLAIMED);
            }
        }
        Acquired released = acquire(key("released"), null);
        assertThat(store().release(key("released"), released.token())).isTrue();
        String shorterNamespace = namespace().substring(0, namespace().length() - 1);
        for (String other : List.of(namespace() + "-other", shorterNamespace, namespace() + ":order-1")) {
            acquire(new StoreKey(other, "order-1"), null);
        }

        List<ListedKey> listed = listAll(KeyFilter.ALL, 7);

        assertThat(ids(listed)).as("every key of the namespace, once; no released key, no other namespace's")
                .containsExactlyInAnyOrderElementsOf(expected.keySet());
        for (ListedKey k : listed) {
            assertThat(k.key().namespace()).isEqualTo(namespace());
            String id = k.key().id();
            assertThat(k.stored().state()).as("state of %s", id).isEqualTo(expected.get(id));
            assertThat(k.stored().attempts()).as("attempts of %s", id).isEqualTo(1);
            assertThat(k.stored().fingerprint()).as("fingerprint of %s", id).isEqualTo("sha256:" + id.substring(6));
        }
    }

    @Test
    void listShowsKeysAsInspectDoesAndLeavesOutClaimsWhoseLeaseRanOut() {
        StoreKey claimed = key("claimed");
        StoreKey completed = key("completed");
        acquire(claimed, "sha256:aa");
        Acquired owner = acquire(completed, null);
        Instant before = Instant.now();
        assertThat(store().complete(completed, owner.token(), RETENTION)).isTrue();
        acquire(key("taken-over"), null);
        advance(LEASE);
        Instant beforeTakeover = Instant.now();
        acquire(key("taken-over"), "sha256:bb");

        Map<String, StoredKey> listed = byId(listAll(KeyFilter.ALL, 10));

        assertThat(listed.keySet()).as("the claim whose lease ran out is left out").containsExactlyInAnyOrder(
                "completed", "taken-over");
        assertThat(listed.get("completed").state()).isEqualTo(State.COMPLETED);
        assertThat(listed.get("completed").fingerprint()).isNull();
        assertExpiresWithin(listed.get("completed"), before, RETENTION.minus(LEASE));
        StoredKey takenOver = listed.get("taken-over");
        assertThat(takenOver.state()).isEqualTo(State.CLAIMED);
        assertThat(takenOver.attempts()).isEqualTo(2);
        assertThat(takenOver.fingerprint()).isEqualTo("sha256:bb");
        assertExpiresWithin(takenOver, beforeTakeover, LEASE);
    }

    @Test
    void listFiltersByState() {
        for (int i = 0; i < 9; i++) {
            Acquired owner = acquire(key("order-" + i), null);
            if (i < 4) {
                assertThat(store().complete(key("order-" + i), owner.token(), RETENTION)).isTrue();
            }
        }

        List<ListedKey> claimed = listAll(new KeyFilter(State.CLAIMED, ""), 3);
        List<ListedKey> completed = listAll(new KeyFilter(State.COMPLETED, ""), 3);

        assertThat(ids(claimed)).containsExactlyInAnyOrder("order-4", "order-5", "order-6", "order-7", "order-8");
        assertThat(claimed).allSatisfy(k -> assertThat(k.stored().state()).isEqualTo(State.CLAIMED));
        assertThat(ids(completed)).containsExactlyInAnyOrder("order-0", "order-1", "order-2", "order-3");
        assertThat(completed).allSatisfy(k -> assertThat(k.stored().state()).isEqualTo(State.COMPLETED));
    }

    @Test
    void listFiltersByAnIdPrefixTakenLiterally() {
        List<String> ids = List.of("a-1", "a-2", "a-", "a", "ab", "A-1", "b-a-1", "a%1", "ax1", "a_1", "aX1",
                "*?[x]-1", "*?[x]-2", "*?[y]", "*x", "\\x", "\\\\x", "\u00e9-1", "e\u0301-1", "\u00e9");
        for (String id : ids) {
            Acquired owner = acquire(key(id), null);
            if (id.length() % 2 == 0) {
                assertThat(store().complete(key(id), owner.token(), RETENTION)).isTrue();
            }
        }

        assertThat(ids(listAll(new KeyFilter(null, "a-"), 2))).containsExactlyInAnyOrder("a-1", "a-2", "a-");
        assertThat(ids(listAll(new KeyFilter(null, "a%"), 2))).as("a percent sign is no wildcard").containsExactly("a%1");
        assertThat(ids(listAll(new KeyFilter(null, "a_"), 2))).as("an underscore is no wildcard").containsExactly("a_1");
        assertThat(ids(listAll(new KeyFilter(null, "*?[x]"), 2))).as("glob characters are no wildcards")
                .containsExactlyInAnyOrder("*?[x]-1", "*?[x]-2");
        assertThat(ids(listAll(new KeyFilter(null, "\\"), 2))).as("a backslash is no escape")
                .containsExactlyInAnyOrder("\\x", "\\\\x");
        assertThat(ids(listAll(new KeyFilter(null, "\u00e9"), 2))).as("no Unicode normalisation")
                .containsExactlyInAnyOrder("\u00e9-1", "\u00e9");
        assertThat(ids(listAll(new KeyFilter(null, "A"), 2))).as("no case folding").containsExactly("A-1");
        assertThat(ids(listAll(new KeyFilter(State.COMPLETED, "a-"), 2))).as("prefix and state").containsExactly("a-");
        assertThat(ids(listAll(new KeyFilter(State.CLAIMED, "a-"), 2))).containsExactlyInAnyOrder("a-1", "a-2");
        assertThat(ids(listAll(new KeyFilter(null, "nothing"), 2))).isEmpty();
        assertThat(ids(listAll(KeyFilter.ALL, 5))).containsExactlyInAnyOrderElementsOf(ids);
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("dev.idem.testkit.DedupStoreContract#unusualIds")
    void keyWithAnyTextIsListedAndPurgedExactly(String description, String id) {
        StoreKey key = key(id);
        String shorterId = id.substring(0, id.offsetByCodePoints(id.length(), -1));
        Acquired owner = acquire(key, null);
        assertThat(store().complete(key, owner.token(), RETENTION)).isTrue();
        acquire(key(shorterId), null);

        assertThat(ids(listAll(KeyFilter.ALL, 1))).containsExactlyInAnyOrder(id, shorterId);
        List<ListedKey> exact = listAll(new KeyFilter(null, id), 1);
        assertThat(exact).as("the key as the prefix").hasSize(1);
        assertThat(exact.get(0).key()).isEqualTo(key);
        assertThat(exact.get(0).stored().state()).isEqualTo(State.COMPLETED);
        assertThat(ids(listAll(new KeyFilter(null, shorterId), 1))).as("the key without its last character as the prefix")
                .containsExactlyInAnyOrder(id, shorterId);

        assertThat(purgeAll(Instant.now().plus(RETENTION.multipliedBy(2)), 10)).isEqualTo(1);
        assertThat(inspectable().inspect(key)).isEmpty();
        assertThat(inspect(key(shorterId)).state()).isEqualTo(State.CLAIMED);
    }

    @Test
    void listGoesOnWhileOtherKeysAreWrittenListingEachKeyPresentThroughoutExactlyOnce() {
        Set<String> stable = new HashSet<>();
        for (int i = 0; i < 30; i++) {
            Acquired owner = acquire(key("stable-" + i), null);
            if (i % 3 == 0) {
                assertThat(store().complete(key("stable-" + i), owner.token(), RETENTION)).isTrue();
            }
            stable.add("stable-" + i);
        }
        List<String> seen = new ArrayList<>();
        String cursor = null;
        int round = 0;
        do {
            KeyPage page = inspectable().list(namespace(), KeyFilter.ALL, cursor, 4);
            assertThat(page.keys()).hasSizeLessThanOrEqualTo(4);
            page.keys().forEach(k -> seen.add(k.key().id()));
            cursor = page.cursor();
            // Between pages: new keys claimed and completed, and the last round's removed.
            for (int i = 0; i < 5; i++) {
                StoreKey churn = key("churn-" + round + "-" + i);
                ClaimResult claimed = claimOutsideChecks(churn);
                if (i % 2 == 0 && claimed instanceof Acquired a) {
                    assertThat(inspectable().complete(churn, a.token(), RETENTION)).isTrue();
                }
                if (round > 0) {
                    inspectable().delete(key("churn-" + (round - 1) + "-" + i));
                }
            }
            round++;
            assertThat(round).as("pages of a listing of 30 keys and a few more").isLessThan(1_000);
        } while (cursor != null);

        assertThat(seen).as("no key twice").doesNotHaveDuplicates();
        assertThat(seen).as("every key present throughout").containsAll(stable);
    }

    @Test
    void listRefusesALimitBelowOne() {
        assertThatThrownBy(() -> inspectable().list(namespace(), KeyFilter.ALL, null, 0))
                .isInstanceOf(IllegalArgumentException.class);
    }

    // ---------------------------------------------------------------- purge

    @Test
    void purgeDeletesTheNamespacesCompletedKeysExpiringBeforeTheTimeAndNothingElse() {
        List<StoreKey> old = new ArrayList<>();
        for (int i = 0; i < 5; i++) {
            old.add(key("old-" + i));
            complete(old.get(i));
        }
        StoreKey elsewhere = new StoreKey(namespace() + "-other", "old-0");
        complete(elsewhere);
        advance(Duration.ofMinutes(40));
        List<StoreKey> young = List.of(key("young-0"), key("young-1"));
        young.forEach(this::complete);
        StoreKey claimed = key("claimed");
        acquire(claimed, null);

        long deleted = purgeAll(Instant.now().plus(Duration.ofMinutes(30)), 100);

        assertThat(deleted).as("the keys completed 40 minutes ago, whose hour of retention ends in 20").isEqualTo(5);
        for (StoreKey k : old) {
            assertThat(inspectable().inspect(k)).as("%s", k.id()).isEmpty();
        }
        for (StoreKey k : young) {
            assertThat(inspect(k).state()).as("%s, whose retention ends in an hour", k.id()).isEqualTo(State.COMPLETED);
        }
        assertThat(inspect(claimed).state()).isEqualTo(State.CLAIMED);
        assertThat(inspect(elsewhere).state()).as("the other namespace's key").isEqualTo(State.COMPLETED);
        assertThat(claimOutsideChecks(old.get(0))).as("a purged key is acquired afresh")
                .isInstanceOfSatisfying(Acquired.class, a -> assertThat(a.attempt()).isEqualTo(1));
    }

    @Test
    void purgeNeverDeletesAClaimedKeyWhetherItsLeaseRunsOrRanOut() {
        acquire(key("running"), null);
        acquire(key("lease-over"), null);
        advance(LEASE);
        acquire(key("running"), null);

        assertThat(purgeAll(Instant.now().plus(RETENTION.multipliedBy(10)), 10)).isZero();

        assertThat(inspect(key("running")).state()).isEqualTo(State.CLAIMED);
        assertThat(claimOutsideChecks(key("lease-over"))).as("still remembered for its attempts")
                .isInstanceOfSatisfying(Acquired.class, a -> assertThat(a.attempt()).isEqualTo(2));
    }

    @Test
    void purgeDeletesAtMostItsLimitPerCall() {
        for (int i = 0; i < 7; i++) {
            complete(key("order-" + i));
        }
        List<Long> batches = new ArrayList<>();

        long deleted = purgeAll(Instant.now().plus(RETENTION.multipliedBy(2)), 3, batches);

        assertThat(deleted).isEqualTo(7);
        assertThat(batches).allSatisfy(n -> assertThat(n).isBetween(0L, 3L));
        assertThat(batches.size()).as("calls: %s", batches).isGreaterThanOrEqualTo(3);
        assertThat(listAll(KeyFilter.ALL, 10)).isEmpty();
    }

    @Test
    void purgeWithATimeAlreadyPastDeletesNothing() {
        complete(key("order-1"));

        assertThat(purgeAll(Instant.now().minus(Duration.ofMinutes(1)), 10)).isZero();
        assertThat(purgeAll(Instant.now().plus(RETENTION).minus(Duration.ofMinutes(10)), 10))
                .as("retention ends after the time").isZero();

        assertThat(inspect(key("order-1")).state()).isEqualTo(State.COMPLETED);
    }

    @Test
    void purgeRefusesALimitBelowOne() {
        assertThatThrownBy(() -> inspectable().purge(namespace(), Instant.now(), null, 0))
                .isInstanceOf(IllegalArgumentException.class);
    }

    // ---------------------------------------------------------------- helpers

    /** Claims and completes {@code key} with {@link #RETENTION}. */
    private void complete(StoreKey key) {
        Acquired owner = acquire(key, null);
        assertThat(store().complete(key, owner.token(), RETENTION)).as("complete of %s", key).isTrue();
    }

    /** Every page of a listing of this test's namespace, each checked against {@code limit}, joined. */
    private List<ListedKey> listAll(KeyFilter filter, int limit) {
        List<ListedKey> all = new ArrayList<>();
        String cursor = null;
        int pages = 0;
        do {
            KeyPage page = inspectable().list(namespace(), filter, cursor, limit);
            assertThat(page.keys()).as("page %d of %s", pages, filter).hasSizeLessThanOrEqualTo(limit);
            all.addAll(page.keys());
            cursor = page.cursor();
            assertThat(++pages).as("pages of a listing of %s", filter).isLessThan(10_000);
        } while (cursor != null);
        assertThat(ids(all)).as("listed by %s", filter).doesNotHaveDuplicates();
        return all;
    }

    private static List<String> ids(List<ListedKey> listed) {
        return listed.stream().map(k -> k.key().id()).toList();
    }

    private static Map<String, StoredKey> byId(List<ListedKey> listed) {
        Map<String, StoredKey> out = new HashMap<>();
        listed.forEach(k -> out.put(k.key().id(), k.stored()));
        return out;
    }

    /** Purges this test's namespace call after call until the cursor says it is done; answers how many it deleted. */
    private long purgeAll(Instant expiringBefore, int limit) {
        return purgeAll(expiringBefore, limit, new ArrayList<>());
    }

    private long purgeAll(Instant expiringBefore, int limit, List<Long> batches) {
        long deleted = 0;
        String cursor = null;
        do {
            PurgeBatch batch = inspectable().purge(namespace(), expiringBefore, cursor, limit);
            assertThat(batch.deleted()).as("deleted by call %d", batches.size()).isBetween(0L, (long) limit);
            batches.add(batch.deleted());
            deleted += batch.deleted();
            cursor = batch.cursor();
            assertThat(batches.size()).as("calls of a purge").isLessThan(10_000);
        } while (cursor != null);
        return deleted;
    }

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
