package dev.idem.store.jdbc;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ClaimResult.Acquired;
import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoreKey;
import dev.idem.spi.TransactionalDedupStore;
import dev.idem.spi.TransactionalDedupStore.Outcome;
import dev.idem.spi.TransactionalDedupStore.StoreTransaction;
import dev.idem.spi.TransactionalDedupStore.Work;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Queue;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.ThreadLocalRandom;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import java.util.stream.Collectors;
import org.jdbi.v3.core.Handle;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Transactional mode ({@link JdbcDedupStore#runOnce}) against one database per subclass: the key and
 * the work's own writes (one row per run in a business table without a unique key) commit or roll
 * back together, and a concurrent run of the same key waits, then ends as a duplicate.
 */
abstract class AbstractTransactionalModeTest {

    private static final Duration RETENTION = Duration.ofHours(1);
    private static final Duration LEASE = Duration.ofSeconds(30);

    /** Keys two threads race over, as many as the issue asks of the pipeline; {@code -Didem.test.raced-keys} changes it. */
    private static final int RACED_KEYS = Integer.getInteger("idem.test.raced-keys", 10_000);

    private JdbcDedupStore store;
    private String business;
    private String namespace;

    abstract TestDatabase database();

    @BeforeEach
    void createStoreAndBusinessTable() {
        store = AbstractJdbcDedupStoreTest.create(database().config());
        business = database().newTable("idem_business");
        database().jdbi().useHandle(handle -> handle.execute("CREATE TABLE " + business
                + " (message_key VARCHAR(100) NOT NULL, thread_name VARCHAR(100))"));
        namespace = "tx-" + UUID.randomUUID().toString().substring(0, 8);
    }

    @AfterEach
    void closeStore() {
        store.close();
    }

    @Test
    void runOnceCommitsTheWorkAndTheKeyTogether() throws Exception {
        StoreKey key = key("order-1");

        assertThat(store.runOnce(key, "sha256:aa", RETENTION, insertRow("order-1"))).isEqualTo(Outcome.COMMITTED);

        assertThat(businessRows()).containsExactly("order-1");
        assertThat(claim(key)).isEqualTo(new Duplicate(true));
    }

    @Test
    void aGroupCommitsItsMembersTogetherAndRollsBackAFailingOneAlone() throws Exception {
        store.runOnce(key("done-before"), null, RETENTION, insertRow("done-before"));
        List<TransactionalDedupStore.GroupMember> members = List.of(
                member("g-1", insertRow("g-1")),
                member("g-2", tx -> {
                    insertRow("g-2").run(tx);
                    throw new IllegalStateException("fails after its write (test)");
                }),
                member("done-before", insertRow("done-before-again")),
                member("g-3", insertRow("g-3")));

        List<TransactionalDedupStore.GroupResult> results = store.runGroup(members);

        assertThat(results).hasSize(4);
        assertThat(results.get(0)).isEqualTo(new TransactionalDedupStore.GroupResult.Done(Outcome.COMMITTED));
        assertThat(results.get(1)).isInstanceOfSatisfying(TransactionalDedupStore.GroupResult.Failed.class,
                f -> assertThat(f.cause()).hasMessageContaining("fails after its write"));
        assertThat(results.get(2)).isEqualTo(new TransactionalDedupStore.GroupResult.Done(Outcome.DUPLICATE));
        assertThat(results.get(3)).isEqualTo(new TransactionalDedupStore.GroupResult.Done(Outcome.COMMITTED));
        assertThat(businessRows()).containsExactlyInAnyOrder("done-before", "g-1", "g-3");
        assertThat(claim(key("g-1"))).isEqualTo(new Duplicate(true));
        assertThat(claim(key("g-3"))).isEqualTo(new Duplicate(true));
        assertThat(claim(key("g-2"))).as("the failed member's key was rolled back").isInstanceOf(Acquired.class);
    }

    /** The pipeline's way: every key claimed first, so the group locks existing rows and completes them at the end. */
    @Test
    void aGroupOverClaimedKeysCompletesWhatRanAndLeavesAFailingMembersClaimAsItWas() throws Exception {
        store.runOnce(key("c-done"), null, RETENTION, insertRow("c-done"));
        Acquired c1 = (Acquired) claim(key("c-1"));
        Acquired c2 = (Acquired) claim(key("c-2"));
        Acquired c3 = (Acquired) claim(key("c-3"));
        List<TransactionalDedupStore.GroupMember> members = List.of(
                member("c-1", insertRow("c-1")),
                member("c-2", tx -> {
                    insertRow("c-2").run(tx);
                    throw new IllegalStateException("fails after its write (test)");
                }),
                member("c-done", insertRow("c-done-again")),
                member("c-3", insertRow("c-3")));

        List<TransactionalDedupStore.GroupResult> results = store.runGroup(members);

        assertThat(results).containsExactly(
                new TransactionalDedupStore.GroupResult.Done(Outcome.COMMITTED),
                results.get(1),
                new TransactionalDedupStore.GroupResult.Done(Outcome.DUPLICATE),
                new TransactionalDedupStore.GroupResult.Done(Outcome.COMMITTED));
        assertThat(results.get(1)).isInstanceOf(TransactionalDedupStore.GroupResult.Failed.class);
        assertThat(businessRows()).containsExactlyInAnyOrder("c-done", "c-1", "c-3");
        assertThat(claim(key("c-1"))).isEqualTo(new Duplicate(true));
        assertThat(claim(key("c-3"))).isEqualTo(new Duplicate(true));
        assertThat(store.complete(key("c-1"), c1.token(), RETENTION))
                .as("the group took the key over from the claim").isFalse();
        assertThat(store.complete(key("c-3"), c3.token(), RETENTION)).isFalse();
        assertThat(claim(key("c-2"))).as("the failed member's claim is still live").isInstanceOf(ClaimResult.InProgress.class);
        assertThat(store.complete(key("c-2"), c2.token(), RETENTION))
                .as("the failed member's claim is exactly as it was, its owner's token still holding it").isTrue();
    }

    @Test
    void savepointsOnFailureRunAGroupWithoutFailuresOnceAndCompleteEveryKey() throws Exception {
        store.runOnce(key("s-done"), null, RETENTION, insertRow("s-done"));
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        List<TransactionalDedupStore.GroupMember> members = new ArrayList<>();
        for (String id : List.of("s-1", "s-2", "s-done", "s-3")) {
            if (!id.equals("s-done")) {
                claim(key(id));
            }
            members.add(member(id, counted(runs, id, insertRow(id))));
        }

        List<TransactionalDedupStore.GroupResult> results =
                store.runGroup(members, TransactionalDedupStore.Savepoints.ON_FAILURE);

        assertThat(results).containsExactly(
                new TransactionalDedupStore.GroupResult.Done(Outcome.COMMITTED),
                new TransactionalDedupStore.GroupResult.Done(Outcome.COMMITTED),
                new TransactionalDedupStore.GroupResult.Done(Outcome.DUPLICATE),
                new TransactionalDedupStore.GroupResult.Done(Outcome.COMMITTED));
        assertThat(runs).containsOnlyKeys("s-1", "s-2", "s-3");
        assertThat(runs.values()).allSatisfy(count -> assertThat(count).hasValue(1));
        assertThat(businessRows()).containsExactlyInAnyOrder("s-done", "s-1", "s-2", "s-3");
        for (String id : List.of("s-1", "s-2", "s-3")) {
            assertThat(claim(key(id))).isEqualTo(new Duplicate(true));
        }
    }

    /**
     * A failing member of a group without savepoints rolls the whole first run back; the group then runs with a
     * savepoint per member, so the members before it run twice and only their second run's writes commit.
     */
    @Test
    void savepointsOnFailureRunTheGroupAgainWithSavepointsWhenAWorkThrows() throws Exception {
        Map<String, AtomicInteger> runs = new ConcurrentHashMap<>();
        Acquired failing = null;
        List<TransactionalDedupStore.GroupMember> members = new ArrayList<>();
        for (String id : List.of("f-1", "f-2", "f-fails", "f-3")) {
            ClaimResult claimed = claim(key(id));
            Work work = insertRow(id);
            if (id.equals("f-fails")) {
                failing = (Acquired) claimed;
                work = tx -> {
                    insertRow("f-fails").run(tx);
                    throw new IllegalStateException("fails after its write (test)");
                };
            }
            members.add(member(id, counted(runs, id, work)));
        }

        List<TransactionalDedupStore.GroupResult> results =
                store.runGroup(members, TransactionalDedupStore.Savepoints.ON_FAILURE);

        assertThat(results).hasSize(4);
        assertThat(results.get(2)).isInstanceOfSatisfying(TransactionalDedupStore.GroupResult.Failed.class,
                f -> assertThat(f.cause()).hasMessageContaining("fails after its write"));
        assertThat(List.of(results.get(0), results.get(1), results.get(3)))
                .containsOnly(new TransactionalDedupStore.GroupResult.Done(Outcome.COMMITTED));
        assertThat(runs.get("f-1")).as("ran before the failure, then again with savepoints").hasValue(2);
        assertThat(runs.get("f-2")).hasValue(2);
        assertThat(runs.get("f-fails")).hasValue(2);
        assertThat(runs.get("f-3")).as("after the failure: only the second run reached it").hasValue(1);
        assertThat(businessRows()).as("the rolled-back first run left nothing")
                .containsExactlyInAnyOrder("f-1", "f-2", "f-3");
        assertThat(store.complete(key("f-fails"), failing.token(), RETENTION))
                .as("the failed member's claim is exactly as it was").isTrue();
    }

    private static Work counted(Map<String, AtomicInteger> runs, String id, Work work) {
        return tx -> {
            runs.computeIfAbsent(id, ignored -> new AtomicInteger()).incrementAndGet();
            work.run(tx);
        };
    }

    @Test
    void racingGroupsOverClaimedKeysRunEachKeyOnce() throws Exception {
        int keys = 1_000;
        List<ClaimRequest> requests = new ArrayList<>();
        for (int i = 0; i < keys; i++) {
            requests.add(new ClaimRequest(key("claimed-" + i), null, LEASE, LEASE));
        }
        assertThat(store.claim(requests)).allMatch(Acquired.class::isInstance);
        AtomicInteger committed = new AtomicInteger();
        AtomicInteger duplicates = new AtomicInteger();
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                int direction = t;
                done.add(pool.submit(() -> {
                    for (int g = 0; g < keys / 20; g++) {
                        // The two threads walk the keys in opposite orders, so their groups meet and overlap.
                        int from = direction == 0 ? g * 20 : keys - (g + 1) * 20;
                        List<TransactionalDedupStore.GroupMember> left = new ArrayList<>();
                        for (int i = from; i < from + 20; i++) {
                            left.add(member("claimed-" + i, insertRow("claimed-" + i)));
                        }
                        while (!left.isEmpty()) {
                            List<TransactionalDedupStore.GroupResult> results;
                            try {
                                results = store.runGroup(left);
                            } catch (StoreException e) {
                                continue; // A deadlock between the two groups: all of it again.
                            }
                            List<TransactionalDedupStore.GroupMember> again = new ArrayList<>();
                            for (int j = 0; j < left.size(); j++) {
                                if (results.get(j) instanceof TransactionalDedupStore.GroupResult.Done d) {
                                    (d.outcome() == Outcome.COMMITTED ? committed : duplicates).incrementAndGet();
                                } else {
                                    again.add(left.get(j));
                                }
                            }
                            left = again;
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(5, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
        assertThat(businessRows()).hasSize(keys).doesNotHaveDuplicates();
        assertThat(committed.get()).isEqualTo(keys);
        assertThat(duplicates.get()).isEqualTo(keys);
    }

    @Test
    void aMemberWhoseStatementTheDatabaseRefusesIsRolledBackAloneAndTheGroupGoesOn() {
        List<TransactionalDedupStore.GroupMember> members = List.of(
                member("h-1", insertRow("h-1")),
                member("h-2", tx -> {
                    // PostgreSQL aborts the whole transaction on a refused statement; the savepoint brings it back.
                    tx.unwrap(Handle.class).execute("INSERT INTO " + business + " (no_such_column) VALUES (1)");
                }),
                member("h-3", insertRow("h-3")));

        List<TransactionalDedupStore.GroupResult> results = store.runGroup(members);

        assertThat(results.get(0)).isEqualTo(new TransactionalDedupStore.GroupResult.Done(Outcome.COMMITTED));
        assertThat(results.get(1)).isInstanceOf(TransactionalDedupStore.GroupResult.Failed.class);
        assertThat(results.get(2)).isEqualTo(new TransactionalDedupStore.GroupResult.Done(Outcome.COMMITTED));
        assertThat(businessRows()).containsExactlyInAnyOrder("h-1", "h-3");
    }

    @Test
    void racingGroupsOverTheSameKeysLeaveExactlyOneRowPerKey() throws Exception {
        int keys = 2_000;
        ExecutorService pool = Executors.newFixedThreadPool(2);
        try {
            List<Future<?>> done = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                done.add(pool.submit(() -> {
                    for (int from = 0; from < keys; from += 25) {
                        List<TransactionalDedupStore.GroupMember> group = new ArrayList<>();
                        for (int i = from; i < from + 25; i++) {
                            group.add(member("race-" + i, insertRow("race-" + i)));
                        }
                        for (List<TransactionalDedupStore.GroupMember> left = group; !left.isEmpty(); ) {
                            List<TransactionalDedupStore.GroupResult> results;
                            try {
                                results = store.runGroup(left);
                            } catch (StoreException e) {
                                continue; // A deadlock between the two groups: all of it again.
                            }
                            List<TransactionalDedupStore.GroupMember> again = new ArrayList<>();
                            for (int j = 0; j < left.size(); j++) {
                                if (results.get(j) instanceof TransactionalDedupStore.GroupResult.Failed) {
                                    again.add(left.get(j));
                                }
                            }
                            left = again;
                        }
                    }
                    return null;
                }));
            }
            for (Future<?> f : done) {
                f.get(5, TimeUnit.MINUTES);
            }
        } finally {
            pool.shutdownNow();
        }
        List<String> rows = businessRows();
        assertThat(rows).hasSize(keys).doesNotHaveDuplicates();
    }

    private TransactionalDedupStore.GroupMember member(String id, Work work) {
        return new TransactionalDedupStore.GroupMember(key(id), null, RETENTION, null, false, work);
    }

    @Test
    void aBatchRunsItsWorkOnceForEveryKeyNotCompletedAndCommitsThemTogether() throws Exception {
        store.runOnce(key("b-done"), "sha256:aa", RETENTION, insertRow("b-done"));
        Acquired claimed = (Acquired) claim(key("b-2"));
        List<List<Integer>> runs = new ArrayList<>();

        List<Outcome> outcomes = store.runBatch(List.of(batchMember("b-1"), batchMember("b-done"), batchMember("b-2")),
                (tx, running) -> {
                    runs.add(running);
                    insertRow("b-1").run(tx);
                    insertRow("b-2").run(tx);
                });

        assertThat(outcomes).containsExactly(Outcome.COMMITTED, Outcome.DUPLICATE, Outcome.COMMITTED);
        assertThat(runs).containsExactly(List.of(0, 2));
        assertThat(businessRows()).containsExactlyInAnyOrder("b-done", "b-1", "b-2");
        assertThat(claim(key("b-1"))).isEqualTo(new Duplicate(true));
        assertThat(claim(key("b-2"))).isEqualTo(new Duplicate(true));
        assertThat(store.complete(key("b-2"), claimed.token(), RETENTION))
                .as("the batch took the key over from the claim").isFalse();
        assertThat(store.runsBatches()).isTrue();
    }

    @Test
    void aBatchWhoseWorkThrowsCommitsNothingAndLeavesItsClaimsAsTheyWere() {
        claim(key("f-1"));
        claim(key("f-2"));

        assertThatThrownBy(() -> store.runBatch(List.of(batchMember("f-1"), batchMember("f-2"), batchMember("f-3")),
                (tx, running) -> {
                    insertRow("f-1").run(tx);
                    insertRow("f-2").run(tx);
                    throw new IllegalStateException("fails after its writes (test)");
                })).hasMessage("fails after its writes (test)");

        assertThat(businessRows()).isEmpty();
        assertThat(claim(key("f-1"))).as("still claimed").isInstanceOf(ClaimResult.InProgress.class);
        assertThat(claim(key("f-2"))).isInstanceOf(ClaimResult.InProgress.class);
        assertThat(claim(key("f-3"))).as("never recorded").isInstanceOf(Acquired.class);
    }

    @Test
    void aBatchOfCompletedKeysDoesNotRunItsWork() throws Exception {
        store.runOnce(key("d-1"), "sha256:aa", RETENTION, insertRow("d-1"));
        store.runOnce(key("d-2"), "sha256:aa", RETENTION, insertRow("d-2"));

        List<Outcome> outcomes = store.runBatch(List.of(
                new TransactionalDedupStore.BatchMember(key("d-1"), "sha256:aa", RETENTION),
                new TransactionalDedupStore.BatchMember(key("d-2"), "sha256:bb", RETENTION)),
                (tx, running) -> {
                    throw new AssertionError("ran for " + running);
                });

        assertThat(outcomes).containsExactly(Outcome.DUPLICATE, Outcome.DUPLICATE_FINGERPRINT_MISMATCH);
        assertThat(businessRows()).containsExactlyInAnyOrder("d-1", "d-2");
    }

    private TransactionalDedupStore.BatchMember batchMember(String id) {
        return new TransactionalDedupStore.BatchMember(key(id), null, RETENTION);
    }

    @Test
    void runOnceOfACompletedKeyIsDuplicateWithoutRunningTheWork() throws Exception {
        StoreKey key = key("order-1");
        store.runOnce(key, "sha256:aa", RETENTION, insertRow("order-1"));
        AtomicInteger runs = new AtomicInteger();

        assertThat(store.runOnce(key, "sha256:aa", RETENTION, tx -> runs.incrementAndGet())).isEqualTo(Outcome.DUPLICATE);
        assertThat(store.runOnce(key, null, RETENTION, tx -> runs.incrementAndGet())).isEqualTo(Outcome.DUPLICATE);
        assertThat(store.runOnce(key, "sha256:bb", RETENTION, tx -> runs.incrementAndGet()))
                .isEqualTo(Outcome.DUPLICATE_FINGERPRINT_MISMATCH);

        assertThat(runs).hasValue(0);
        assertThat(businessRows()).containsExactly("order-1");
    }

    @Test
    void keyCompletedByAClaimIsADuplicateForRunOnce() throws Exception {
        StoreKey key = key("order-1");
        Acquired owner = (Acquired) claim(key);
        store.complete(key, owner.token(), RETENTION);

        assertThat(store.runOnce(key, null, RETENTION, insertRow("order-1"))).isEqualTo(Outcome.DUPLICATE);
        assertThat(businessRows()).isEmpty();
    }

    @Test
    void workThatThrowsRollsBackItsWritesAndLeavesTheKeyAbsent() {
        StoreKey key = key("order-1");
        IllegalStateException failure = new IllegalStateException("handler failed");

        assertThatThrownBy(() -> store.runOnce(key, null, RETENTION, tx -> {
            insertRow("order-1").run(tx);
            throw failure;
        })).isSameAs(failure);

        assertThat(businessRows()).isEmpty();
        assertThat(claim(key)).isInstanceOfSatisfying(Acquired.class, a -> assertThat(a.attempt()).isEqualTo(1));
    }

    @Test
    void theTransactionIsOfferedAsConnectionAndHandleOnlyWhileTheWorkRuns() throws Exception {
        AtomicReference<StoreTransaction> seen = new AtomicReference<>();

        store.runOnce(key("order-1"), null, RETENTION, tx -> {
            seen.set(tx);
            Connection connection = tx.unwrap(Connection.class);
            assertThat(connection).isNotNull();
            assertThat(connection.getAutoCommit()).as("inside a transaction").isFalse();
            assertThat(tx.unwrap(Handle.class)).isNotNull();
            assertThat(tx.unwrap(Handle.class).getConnection()).isSameAs(connection);
            assertThat(tx.unwrap(String.class)).isNull();
        });

        assertThatThrownBy(() -> seen.get().unwrap(Connection.class))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("has ended");
    }

    @Test
    void runOnceTakesOverAClaimedKeyAndFencesItsFormerOwner() throws Exception {
        StoreKey key = key("order-1");
        Acquired claimer = (Acquired) claim(key);

        assertThat(store.runOnce(key, null, RETENTION, insertRow("order-1"))).isEqualTo(Outcome.COMMITTED);

        assertThat(store.complete(key, claimer.token(), RETENTION)).as("the former owner's complete").isFalse();
        assertThat(store.release(key, claimer.token())).as("the former owner's release").isFalse();
        assertThat(claim(key)).isEqualTo(new Duplicate(true));
    }

    @Test
    void runOnceThatRollsBackLeavesAClaimAndItsRecordedStartsAsTheyWere() throws Exception {
        StoreKey key = key("order-1");
        Acquired claimer = (Acquired) claim(key);
        assertThat(store.recordStart(key, claimer.token())).isEqualTo(1);

        assertThatThrownBy(() -> store.runOnce(key, null, RETENTION, tx -> {
            insertRow("order-1").run(tx);
            throw new IllegalStateException("handler failed");
        })).hasMessage("handler failed");

        assertThat(store.recordStart(key, claimer.token())).as("the claimer's next start").isEqualTo(2);
        assertThat(businessRows()).isEmpty();

        assertThat(store.runOnce(key, null, RETENTION, insertRow("order-1"))).isEqualTo(Outcome.COMMITTED);
        assertThat(store.recordStart(key, claimer.token())).as("a start once the key is completed").isZero();
        assertThat(claim(key)).isEqualTo(new Duplicate(true));
    }

    @Test
    void runOnceRunsAgainOnceTheRetentionOfACompletedKeyRanOut() throws Exception {
        StoreKey key = key("order-1");
        store.runOnce(key, null, RETENTION, insertRow("order-1"));

        AbstractJdbcDedupStoreTest.shiftClock(database(), database().table, RETENTION);

        assertThat(store.runOnce(key, null, RETENTION, insertRow("order-1"))).isEqualTo(Outcome.COMMITTED);
        assertThat(businessRows()).containsExactly("order-1", "order-1");
    }

    @Test
    @Timeout(value = 1, unit = TimeUnit.MINUTES)
    void aConcurrentRunOfTheSameKeyWaitsForTheFirstThenIsADuplicate() throws Exception {
        StoreKey key = key("order-1");
        CountDownLatch firstInside = new CountDownLatch(1);
        CountDownLatch letFirstCommit = new CountDownLatch(1);
        AtomicInteger secondRuns = new AtomicInteger();
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            Future<Outcome> first = threads.submit(() -> store.runOnce(key, null, RETENTION, tx -> {
                insertRow("order-1").run(tx);
                firstInside.countDown();
                letFirstCommit.await();
            }));
            assertThat(firstInside.await(20, TimeUnit.SECONDS)).isTrue();
            Future<Outcome> second = threads.submit(() -> store.runOnce(key, null, RETENTION, tx -> {
                secondRuns.incrementAndGet();
                insertRow("order-1").run(tx);
            }));

            assertThatThrownBy(() -> second.get(500, TimeUnit.MILLISECONDS))
                    .as("the second run waits on the key").isInstanceOf(TimeoutException.class);
            letFirstCommit.countDown();

            assertThat(first.get(20, TimeUnit.SECONDS)).isEqualTo(Outcome.COMMITTED);
            assertThat(second.get(20, TimeUnit.SECONDS)).isEqualTo(Outcome.DUPLICATE);
            assertThat(secondRuns).hasValue(0);
            assertThat(businessRows()).containsExactly("order-1");
        } finally {
            letFirstCommit.countDown();
            threads.shutdownNow();
        }
    }

    @Test
    @Timeout(value = 1, unit = TimeUnit.MINUTES)
    void aConcurrentRunOfTheSameKeyRunsWhenTheFirstRollsBack() throws Exception {
        StoreKey key = key("order-1");
        CountDownLatch firstInside = new CountDownLatch(1);
        CountDownLatch letFirstFail = new CountDownLatch(1);
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            Future<Outcome> first = threads.submit(() -> store.runOnce(key, null, RETENTION, tx -> {
                insertRow("order-1").run(tx);
                firstInside.countDown();
                letFirstFail.await();
                throw new IllegalStateException("first run fails");
            }));
            assertThat(firstInside.await(20, TimeUnit.SECONDS)).isTrue();
            Future<Outcome> second = threads.submit(() -> store.runOnce(key, null, RETENTION, insertRow("order-1")));
            Thread.sleep(200);
            letFirstFail.countDown();

            assertThatThrownBy(() -> first.get(20, TimeUnit.SECONDS)).hasRootCauseMessage("first run fails");
            assertThat(second.get(20, TimeUnit.SECONDS)).isEqualTo(Outcome.COMMITTED);
            assertThat(businessRows()).containsExactly("order-1");
        } finally {
            letFirstFail.countDown();
            threads.shutdownNow();
        }
    }

    /**
     * Two threads run the same keys in the same order, so that they meet on each key; a run fails at
     * random one time in ten, after its insert, and its caller runs it again, as the pipeline does. Every
     * key must end with exactly one business row: no lost write, no duplicate.
     */
    @Test
    @Timeout(value = 10, unit = TimeUnit.MINUTES)
    void twoThreadsRacingOverTheSameKeysWithRandomFailuresLeaveExactlyOneRowPerKey() throws Exception {
        List<String> ids = new ArrayList<>();
        for (int i = 0; i < RACED_KEYS; i++) {
            ids.add("raced-" + i);
        }
        Queue<String> problems = new ConcurrentLinkedQueue<>();
        AtomicInteger failuresInjected = new AtomicInteger();
        AtomicInteger storeRetries = new AtomicInteger();
        Map<Outcome, Long> outcomes;
        ExecutorService threads = Executors.newFixedThreadPool(2);
        try {
            List<Future<List<Outcome>>> runs = new ArrayList<>();
            for (int t = 0; t < 2; t++) {
                runs.add(threads.submit(() -> {
                    List<Outcome> seen = new ArrayList<>();
                    for (String id : ids) {
                        seen.add(runUntilDone(key(id), id, failuresInjected, storeRetries, problems));
                    }
                    return seen;
                }));
            }
            List<Outcome> all = new ArrayList<>();
            for (Future<List<Outcome>> run : runs) {
                all.addAll(run.get(9, TimeUnit.MINUTES));
            }
            outcomes = all.stream().collect(Collectors.groupingBy(o -> o, Collectors.counting()));
        } finally {
            threads.shutdownNow();
        }

        assertThat(problems).isEmpty();
        assertThat(failuresInjected.get()).as("failures injected").isPositive();
        assertThat(outcomes.get(Outcome.COMMITTED)).as("commits, one per key").isEqualTo(RACED_KEYS);
        assertThat(outcomes.get(Outcome.DUPLICATE)).as("duplicates, one per key").isEqualTo(RACED_KEYS);
        Map<String, Integer> rows = database().jdbi().withHandle(handle -> handle.createQuery(
                        "SELECT message_key, COUNT(*) FROM " + business + " GROUP BY message_key")
                .map((rs, ctx) -> Map.entry(rs.getString(1), rs.getInt(2)))
                .collect(Collectors.toMap(Map.Entry::getKey, Map.Entry::getValue)));
        assertThat(rows).hasSize(RACED_KEYS);
        assertThat(rows.entrySet()).filteredOn(e -> e.getValue() != 1).as("keys without exactly one row").isEmpty();
        List<ClaimRequest> every = ids.stream().map(id -> new ClaimRequest(key(id), null, LEASE, LEASE)).toList();
        assertThat(store.claim(every)).as("every key is completed").containsOnly(new Duplicate(true));
    }

    private Outcome runUntilDone(StoreKey key, String id, AtomicInteger failuresInjected, AtomicInteger storeRetries,
            Queue<String> problems) {
        for (int attempt = 1; attempt <= 100; attempt++) {
            try {
                return store.runOnce(key, null, RETENTION, tx -> {
                    insertRow(id).run(tx);
                    if (ThreadLocalRandom.current().nextInt(10) == 0) {
                        failuresInjected.incrementAndGet();
                        throw new IllegalStateException("injected failure");
                    }
                });
            } catch (StoreException e) {
                if (!e.retriable()) {
                    problems.add(id + ": " + e);
                    return null;
                }
                storeRetries.incrementAndGet();
            } catch (IllegalStateException e) {
                // The injected failure: rolled back, so run it again.
            } catch (Exception e) {
                problems.add(id + ": " + e);
                return null;
            }
        }
        problems.add(id + ": not done after 100 attempts");
        return null;
    }

    // ---------------------------------------------------------------- helpers

    private StoreKey key(String id) {
        return new StoreKey(namespace, id);
    }

    private ClaimResult claim(StoreKey key) {
        return store.claim(List.of(new ClaimRequest(key, null, LEASE, LEASE))).get(0);
    }

    /** Work that inserts one business row for {@code id} through the transaction's Jdbi handle. */
    private Work insertRow(String id) {
        return tx -> tx.unwrap(Handle.class)
                .createUpdate("INSERT INTO " + business + " (message_key, thread_name) VALUES (?, ?)")
                .bind(0, id)
                .bind(1, Thread.currentThread().getName())
                .execute();
    }

    private List<String> businessRows() {
        return database().jdbi().withHandle(handle -> handle.createQuery("SELECT message_key FROM " + business)
                .mapTo(String.class).list());
    }
}
