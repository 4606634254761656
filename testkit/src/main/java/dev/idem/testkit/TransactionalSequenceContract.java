package dev.idem.testkit;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.idem.spi.ClaimResult.Duplicate;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StoreKey;
import dev.idem.spi.TransactionalDedupStore;
import dev.idem.spi.TransactionalDedupStore.Outcome;
import dev.idem.spi.TransactionalDedupStore.Work;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The contract of a store that is both a {@link TransactionalDedupStore} and a {@link SequencedDedupStore}: the
 * whole {@link SequencedDedupStoreContract}, plus the sequence guard inside the handler's transaction,
 * {@link TransactionalDedupStore#runOnce(StoreKey, String, Duration, SequenceAdvance, boolean, Work) runOnce with
 * an advance}. A store's test extends it instead of {@link SequencedDedupStoreContract}, with the same hooks; its
 * {@code createStore} returns a store of both kinds.
 *
 * <h2>What it checks</h2>
 * The next number runs its work and raises the watermark in the same transaction; a number at or below the
 * watermark is {@code STALE}, its key recorded as completed (a later run of it is {@code DUPLICATE}) and its work not
 * run; a number beyond a gap is {@code SEQUENCE_GAP} while waiting for gaps, rolled back whole (its key absent, so a
 * later run of it runs, and no watermark left behind for an aggregate never seen), and runs (the watermark jumping)
 * when not waiting; a work that throws leaves the key and the watermark as they were; a duplicate key is answered
 * {@code DUPLICATE} (or a fingerprint mismatch) before the watermark is looked at; a run without an advance keeps
 * no watermark. Racing runs of one aggregate serialize on its watermark: of runs of one number under different keys
 * exactly one commits and the others are stale, and runs of consecutive numbers from racing threads, each run
 * again after a gap, run their works in number order.
 */
public abstract class TransactionalSequenceContract extends SequencedDedupStoreContract {

    /** The store under test as the transactional store it must also be. */
    protected final TransactionalDedupStore transactional() {
        assertThat(store()).as("the store under test").isInstanceOf(TransactionalDedupStore.class);
        return (TransactionalDedupStore) store();
    }

    // ---------------------------------------------------------------- outcomes

    @Test
    void runOfTheNextNumberRunsTheWorkAndRaisesTheWatermark() throws Exception {
        StoreKey account = aggregate("account-1");
        Runs runs = new Runs();

        assertThat(run(key("event-1"), account, 1, true, runs.counting())).isEqualTo(Outcome.COMMITTED);
        assertThat(store().watermark(account)).isEqualTo(1);
        assertThat(run(key("event-2"), account, 2, true, runs.counting())).isEqualTo(Outcome.COMMITTED);

        assertThat(runs.count()).isEqualTo(2);
        assertThat(store().watermark(account)).isEqualTo(2);
        assertThat(run(key("event-2"), account, 2, true, runs.counting())).as("its key again")
                .isEqualTo(Outcome.DUPLICATE);
    }

    @Test
    void runAtOrBelowTheWatermarkIsStaleRecordsItsKeyAndSkipsTheWork() throws Exception {
        StoreKey account = aggregate("account-1");
        for (long n = 1; n <= 3; n++) {
            assertThat(run(key("event-" + n), account, n, true, work -> { })).isEqualTo(Outcome.COMMITTED);
        }
        Runs runs = new Runs();

        assertThat(run(key("late-3"), account, 3, true, runs.counting())).as("the watermark's own number")
                .isEqualTo(Outcome.STALE);
        assertThat(run(key("late-1"), account, 1, false, runs.counting())).as("below it, gaps accepted")
                .isEqualTo(Outcome.STALE);

        assertThat(runs.count()).as("works of stale runs").isZero();
        assertThat(store().watermark(account)).isEqualTo(3);
        assertThat(run(key("late-3"), account, 3, true, runs.counting())).as("a stale run's key, recorded")
                .isEqualTo(Outcome.DUPLICATE);
        assertThat(claim(key("late-1"))).as("a stale run's key, recorded as completed")
                .isEqualTo(new Duplicate(true));
    }

    @Test
    void runBeyondAGapWhileWaitingForGapsRollsBackWholeAndSkipsTheWork() throws Exception {
        StoreKey account = aggregate("account-1");
        assertThat(run(key("event-1"), account, 1, true, work -> { })).isEqualTo(Outcome.COMMITTED);
        Runs runs = new Runs();

        assertThat(run(key("event-3"), account, 3, true, runs.counting())).isEqualTo(Outcome.SEQUENCE_GAP);

        assertThat(runs.count()).isZero();
        assertThat(store().watermark(account)).isEqualTo(1);
        assertThat(run(key("event-2"), account, 2, true, runs.counting())).isEqualTo(Outcome.COMMITTED);
        assertThat(run(key("event-3"), account, 3, true, runs.counting()))
                .as("the gapped run's key was left absent, so it runs once the gap is filled")
                .isEqualTo(Outcome.COMMITTED);
        assertThat(runs.count()).isEqualTo(2);
        assertThat(store().watermark(account)).isEqualTo(3);
    }

    @Test
    void runBeyondAGapOfAnAggregateNeverSeenLeavesNoWatermarkBehind() throws Exception {
        StoreKey account = aggregate("account-1");

        assertThat(run(key("event-2"), account, 2, true, work -> { })).isEqualTo(Outcome.SEQUENCE_GAP);

        assertThat(store().watermark(account)).isZero();
        assertThat(run(key("event-1"), account, 1, true, work -> { })).isEqualTo(Outcome.COMMITTED);
        assertThat(store().watermark(account)).isEqualTo(1);
    }

    @Test
    void runBeyondAGapNotWaitingForGapsRunsAndTheWatermarkJumps() throws Exception {
        StoreKey account = aggregate("account-1");
        assertThat(run(key("event-1"), account, 1, false, work -> { })).isEqualTo(Outcome.COMMITTED);
        Runs runs = new Runs();

        assertThat(run(key("event-5"), account, 5, false, runs.counting())).isEqualTo(Outcome.COMMITTED);

        assertThat(runs.count()).isEqualTo(1);
        assertThat(store().watermark(account)).isEqualTo(5);
        assertThat(run(key("event-3"), account, 3, false, runs.counting())).as("a number skipped over, arriving late")
                .isEqualTo(Outcome.STALE);
        assertThat(run(key("event-9"), aggregate("account-2"), 9, false, runs.counting()))
                .as("the first run of an aggregate never seen").isEqualTo(Outcome.COMMITTED);
        assertThat(store().watermark(aggregate("account-2"))).isEqualTo(9);
    }

    @Test
    void workThatThrowsLeavesTheKeyAndTheWatermarkAsTheyWere() throws Exception {
        StoreKey account = aggregate("account-1");
        assertThat(run(key("event-1"), account, 1, true, work -> { })).isEqualTo(Outcome.COMMITTED);
        IllegalStateException failure = new IllegalStateException("the handler failed");

        assertThatThrownBy(() -> run(key("event-2"), account, 2, true, work -> {
            throw failure;
        })).isSameAs(failure);

        assertThat(store().watermark(account)).isEqualTo(1);
        Runs runs = new Runs();
        assertThat(run(key("event-2"), account, 2, true, runs.counting())).as("run again, as a retry would")
                .isEqualTo(Outcome.COMMITTED);
        assertThat(runs.count()).isEqualTo(1);
        assertThat(store().watermark(account)).isEqualTo(2);
    }

    @Test
    void duplicateKeyIsAnsweredBeforeTheWatermarkIsLookedAt() throws Exception {
        StoreKey account = aggregate("account-1");
        StoreKey key = key("event-1");
        Runs runs = new Runs();
        assertThat(transactional().runOnce(key, "sha256:aa", RETENTION, advanceTo(account, 1), true, runs.counting()))
                .isEqualTo(Outcome.COMMITTED);

        assertThat(transactional().runOnce(key, "sha256:aa", RETENTION, advanceTo(account, 1), true, runs.counting()))
                .as("its number is the watermark's, yet a duplicate key is a duplicate").isEqualTo(Outcome.DUPLICATE);
        assertThat(transactional().runOnce(key, "sha256:bb", RETENTION, advanceTo(account, 1), true, runs.counting()))
                .isEqualTo(Outcome.DUPLICATE_FINGERPRINT_MISMATCH);
        assertThat(transactional().runOnce(key, "sha256:aa", RETENTION, advanceTo(account, 9), true, runs.counting()))
                .as("a duplicate key with a number past a gap").isEqualTo(Outcome.DUPLICATE);

        assertThat(runs.count()).isEqualTo(1);
        assertThat(store().watermark(account)).isEqualTo(1);
    }

    @Test
    void runWithoutAnAdvanceKeepsNoWatermark() throws Exception {
        Runs runs = new Runs();

        assertThat(transactional().runOnce(key("account-1"), null, RETENTION, null, true, runs.counting()))
                .isEqualTo(Outcome.COMMITTED);

        assertThat(runs.count()).isEqualTo(1);
        assertThat(store().watermark(aggregate("account-1"))).isZero();
    }

    @Test
    void watermarkRaisedByARunIsKeptForItsRetention() throws Exception {
        StoreKey account = aggregate("account-1");
        assertThat(run(key("event-4"), account, 4, false, work -> { })).isEqualTo(Outcome.COMMITTED);

        advance(SEQUENCE_RETENTION.minus(clockResolution()));
        assertThat(store().watermark(account)).isEqualTo(4);

        advance(clockResolution());
        assertThat(store().watermark(account)).isZero();
        assertThat(run(key("event-2"), account, 2, false, work -> { })).as("forgotten, so not stale")
                .isEqualTo(Outcome.COMMITTED);
        assertThat(store().watermark(account)).isEqualTo(2);
    }

    // ---------------------------------------------------------------- races

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void racingRunsOfOneNumberUnderDifferentKeysCommitOnceAndTheOthersAreStale() throws Exception {
        StoreKey account = aggregate("account-1");
        int threads = 4;
        int rounds = 5;
        for (int round = 1; round <= rounds; round++) {
            long number = round;
            Queue<Outcome> outcomes = new ConcurrentLinkedQueue<>();
            AtomicInteger ran = new AtomicInteger();
            CyclicBarrier start = new CyclicBarrier(threads);
            runOnThreads(threads, thread -> {
                start.await(30, TimeUnit.SECONDS);
                outcomes.add(run(key("event-" + number + "-copy-" + thread), account, number, true, work -> {
                    ran.incrementAndGet();
                    // Holding the transaction open makes the other runs meet it, not follow it.
                    Thread.sleep(50);
                }));
            });

            assertThat(outcomes).as("round %s", round).containsOnlyOnce(Outcome.COMMITTED)
                    .filteredOn(o -> o != Outcome.COMMITTED).hasSize(threads - 1).containsOnly(Outcome.STALE);
            assertThat(ran).as("works run in round %s", round).hasValue(1);
            assertThat(store().watermark(account)).isEqualTo(number);
        }
    }

    @Test
    @Timeout(value = 2, unit = TimeUnit.MINUTES)
    void racingRunsOfConsecutiveNumbersRunTheirWorksInNumberOrder() throws Exception {
        StoreKey account = aggregate("account-1");
        int threads = 6;
        Queue<Long> order = new ConcurrentLinkedQueue<>();
        Queue<String> unexpected = new ConcurrentLinkedQueue<>();
        CyclicBarrier start = new CyclicBarrier(threads);

        runOnThreads(threads, thread -> {
            long number = threads - thread;
            start.await(30, TimeUnit.SECONDS);
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(60);
            while (true) {
                Outcome outcome = run(key("event-" + number), account, number, true, work -> order.add(number));
                if (outcome == Outcome.COMMITTED) {
                    return;
                }
                if (outcome != Outcome.SEQUENCE_GAP || System.nanoTime() > deadline) {
                    unexpected.add("run of " + number + " answered " + outcome);
                    return;
                }
                Thread.sleep(5);
            }
        });

        assertThat(unexpected).isEmpty();
        List<Long> expected = new ArrayList<>();
        for (long n = 1; n <= threads; n++) {
            expected.add(n);
        }
        assertThat(order).as("the works, in the order they ran and committed").containsExactlyElementsOf(expected);
        assertThat(store().watermark(account)).isEqualTo(threads);
    }

    // ---------------------------------------------------------------- helpers

    /** Runs {@code work} for {@code key} as event {@code number} of {@code aggregate}, without a fingerprint. */
    protected final Outcome run(StoreKey key, StoreKey aggregate, long number, boolean waitForGaps, Work work)
            throws Exception {
        return transactional().runOnce(key, null, RETENTION, advanceTo(aggregate, number), waitForGaps, work);
    }

    /** Counts the works that ran. */
    private static final class Runs {
        private final AtomicInteger count = new AtomicInteger();

        Work counting() {
            return transaction -> count.incrementAndGet();
        }

        int count() {
            return count.get();
        }
    }
}
