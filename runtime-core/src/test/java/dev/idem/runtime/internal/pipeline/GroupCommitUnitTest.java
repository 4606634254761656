package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.StageFixture.delivery;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.internal.pipeline.PipelineState.Phase;
import dev.idem.runtime.internal.pipeline.StageFixture.RecordingSlot;
import dev.idem.spi.ClaimResult;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link GroupCommit} on its own: when a batch of completions is written (full, at once when nothing runs, else
 * after the linger, which is real time), and what each work's own result makes of it (acked and its key resumed,
 * handed back for a lost lease, handed back once the write keeps failing). Other runs going on are a
 * {@link KeyScheduler} whose one worker is held in a run, so that its {@link KeyScheduler.Running} count is 1.
 */
class GroupCommitUnitTest {

    private StageFixture f;
    private GroupCommit commit;
    private final KeyScheduler.Running running = new KeyScheduler.Running();
    private final CountDownLatch endBusyRun = new CountDownLatch(1);
    private DelayedTasks timers;
    private KeyScheduler busy;

    @AfterEach
    void close() throws InterruptedException {
        if (commit != null) {
            commit.close();
        }
        endBusyRun.countDown();
        if (busy != null) {
            busy.shutdown();
            assertThat(busy.awaitTermination(System.nanoTime() + TimeUnit.SECONDS.toNanos(5))).isTrue();
        }
        if (timers != null) {
            timers.close();
        }
        f.close();
    }

    private GroupCommit start(String commitSettings) {
        f = new StageFixture("lease: 1s\ncommit:\n  writers: 1\n" + commitSettings.indent(2));
        commit = new GroupCommit(f.state, f.storeCalls, f.outcomes, f.settlement, running);
        commit.start();
        return commit;
    }

    /** Holds one handler run going on in the pipeline until the test ends. */
    private void aHandlerIsRunning() {
        timers = new DelayedTasks("test-timer", f.ticker);
        timers.start();
        busy = new KeyScheduler("orders", 1, getClass().getClassLoader(), new KeyScheduler.Runner() {
            @Override
            public Step run(Work work, boolean alone) {
                try {
                    endBusyRun.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                return Step.NEXT;
            }

            @Override
            public void handBack(Work work) {
            }
        }, timers, 16, Sequences.ORDER, running, null);
        busy.start();
        busy.submit(List.of(f.work("busy", "p")));
        await().until(() -> running.count() == 1);
    }

    /** A work whose handler succeeded under its claim, with a slot that records how its key is resumed. */
    private Work handled(String key) {
        Work w = f.work(key, "p");
        f.acquire(w);
        w.slot = new RecordingSlot();
        return w;
    }

    private static List<String> slot(Work w) {
        return ((RecordingSlot) w.slot).calls;
    }

    private static boolean resumed(Work w) {
        return slot(w).stream().anyMatch(call -> call.startsWith("resume"));
    }

    @Test
    void aFullBatchIsWrittenInOneCallWithoutWaitingForTheLinger() {
        start("batch-size: 3\nlinger: 1s");
        aHandlerIsRunning();
        List<Work> works = List.of(handled("k1"), handled("k2"), handled("k3"));

        assertThat(commit.submit(works.get(0))).isEqualTo(Step.AWAIT);
        assertThat(commit.submit(works.get(1))).isEqualTo(Step.AWAIT);
        assertThat(delivery(works.get(0)).settled()).as("two of three wait while a handler runs").isFalse();
        long lastSubmitted = System.nanoTime();
        assertThat(commit.submit(works.get(2))).isEqualTo(Step.AWAIT);

        await().until(() -> works.stream().allMatch(w -> delivery(w).settled()));
        long waitedMillis = TimeUnit.NANOSECONDS.toMillis(
                works.stream().mapToLong(w -> delivery(w).settledAtNanos).max().orElseThrow() - lastSubmitted);
        assertThat(waitedMillis).as("written once full, not after the 1 s linger").isLessThan(800);
        assertThat(f.store.completeAllSizes).containsExactly(3);
        assertThat(works).allSatisfy(w -> assertThat(delivery(w).settlements).containsExactly("ack"));
    }

    @Test
    void aCompletionIsWrittenAtOnceWhenNoHandlerRuns() {
        start("batch-size: 10\nlinger: 1s");
        Work w = handled("k1");
        long submitted = System.nanoTime();

        assertThat(commit.submit(w)).isEqualTo(Step.AWAIT);

        await().until(() -> delivery(w).settled());
        assertThat(TimeUnit.NANOSECONDS.toMillis(delivery(w).settledAtNanos - submitted))
                .as("no completion could join it").isLessThan(800);
        assertThat(f.store.completeAllSizes).containsExactly(1);
    }

    @Test
    void aPartialBatchWaitsForTheLingerWhileAHandlerRuns() {
        start("batch-size: 10\nlinger: 200ms");
        aHandlerIsRunning();
        Work first = handled("k1");
        Work second = handled("k2");
        long submitted = System.nanoTime();

        commit.submit(first);
        commit.submit(second);

        await().until(() -> delivery(first).settled() && delivery(second).settled());
        assertThat(TimeUnit.NANOSECONDS.toMillis(delivery(first).settledAtNanos - submitted))
                .isGreaterThanOrEqualTo(200);
        assertThat(f.store.completeAllSizes).as("both in the one batch").containsExactly(2);
    }

    /**
     * The usual order in a pipeline of one worker: the worker submits while its own run still counts as running,
     * then its run ends and nothing runs; the completion is to go then, not a linger later.
     */
    @Test
    void aWaitingBatchGoesAtOnceWhenTheLastRunningHandlerEnds() {
        start("batch-size: 10\nlinger: 1s");
        aHandlerIsRunning();
        Work w = handled("k1");
        commit.submit(w);
        Thread committer = Thread.getAllStackTraces().keySet().stream()
                .filter(t -> t.getName().equals("idem-orders-commit")).findFirst().orElseThrow();
        await().until(() -> committer.getState() == Thread.State.TIMED_WAITING);
        assertThat(delivery(w).settled()).as("waits while a handler runs").isFalse();

        endBusyRun.countDown();
        await().until(() -> running.count() == 0);
        long nothingRuns = System.nanoTime();

        await().until(() -> delivery(w).settled());
        assertThat(TimeUnit.NANOSECONDS.toMillis(delivery(w).settledAtNanos - nothingRuns))
                .as("no completion can join it once nothing runs").isLessThan(800);
    }

    @Test
    void aCompletedWriteAcksTheWorkAndResumesItsKeyWithNext() {
        start("batch-size: 10");
        Work w = handled("k1");
        Work rejected = handled("k2");
        rejected.run.rejected = true;

        commit.submit(w);
        commit.submit(rejected);

        await().until(() -> resumed(w) && resumed(rejected));
        assertThat(slot(w)).containsExactly("resume NEXT");
        assertThat(delivery(w).settlements).containsExactly("ack");
        assertThat(w.claim.held()).isFalse();
        assertThat(f.count("processed")).isEqualTo(1);
        assertThat(f.count("rejected")).as("a rejected run completes its key too").isEqualTo(1);
        assertThat(f.claimInStore(f.work("k1", "p"))).isEqualTo(new ClaimResult.Duplicate(true));
    }

    @Test
    void aKeyTakenOverBeforeItsWriteCountsLeaseLostAndIsHandedBack() {
        start("batch-size: 10");
        Work lost = handled("k1");
        f.takeOver(lost);
        Work kept = handled("k2");

        commit.submit(lost);
        commit.submit(kept);

        await().until(() -> resumed(lost) && resumed(kept));
        assertThat(slot(lost)).as("its key's queue left, then resumed").containsExactly("detach", "resume HANDED_BACK");
        assertThat(delivery(lost).settlements).containsExactly("retryLater(PT0S)");
        assertThat(lost.claim.held()).isFalse();
        assertThat(lost.claim.leaseLost()).isTrue();
        assertThat(f.count("lease-lost")).isEqualTo(1);
        assertThat(f.claimInStore(f.work("k1", "p"))).as("the new owner keeps the key")
                .isInstanceOf(ClaimResult.InProgress.class);
        assertThat(slot(kept)).as("settled by its own result").containsExactly("resume NEXT");
        assertThat(f.count("processed")).isEqualTo(1);
    }

    @Test
    void aWriteThatFailsOnceIsTriedAgainAndAcked() {
        start("batch-size: 10");
        f.store.fail("completeAll", 1);
        Work w = handled("k1");

        commit.submit(w);

        await().until(() -> resumed(w));
        assertThat(slot(w)).containsExactly("resume NEXT");
        assertThat(delivery(w).settlements).containsExactly("ack");
        assertThat(f.store.calls("completeAll")).isEqualTo(2);
        assertThat(f.count("commit-failed")).isZero();
    }

    @Test
    void aWriteThatKeepsFailingEndsAsCommitFailedAndHandsTheWorkBack() {
        start("batch-size: 10");
        f.store.failAlways("completeAll");
        Work w = handled("k1");

        commit.submit(w);
        await().until(() -> f.store.calls("completeAll") >= 1);
        // Aborting ends the back-off between tries, which would take seconds in real time.
        f.state.phase = Phase.ABORTING;

        await().until(() -> resumed(w));
        assertThat(slot(w)).containsExactly("detach", "resume HANDED_BACK");
        assertThat(delivery(w).settlements).containsExactly("retryLater(PT0S)");
        assertThat(f.count("commit-failed")).isEqualTo(1);
        assertThat(f.count("processed")).isZero();
        assertThat(w.claim.held()).isFalse();
    }

    @Test
    void closingWritesWhatIsPendingThenRefusesMore() {
        start("batch-size: 10\nlinger: 1s");
        aHandlerIsRunning();
        Work w = handled("k1");
        commit.submit(w);

        commit.close();

        assertThat(delivery(w).settlements).containsExactly("ack");
        Work late = handled("k2");
        assertThatThrownBy(() -> commit.submit(late)).isInstanceOf(IllegalStateException.class);
        assertThat(delivery(late).settled()).isFalse();
    }
}
