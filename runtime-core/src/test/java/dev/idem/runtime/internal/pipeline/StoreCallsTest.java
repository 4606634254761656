package dev.idem.runtime.internal.pipeline;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import dev.idem.runtime.internal.pipeline.PipelineState.Phase;
import dev.idem.runtime.internal.pipeline.StoreCalls.Completion;
import dev.idem.runtime.internal.pipeline.StoreCalls.Renewal;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.StoreKey;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link StoreCalls} on its own: whether the store is down, a claim's and a completion's tries with back-off and
 * when they give up, and what a renewal and a suspect's recorded start answer. The back-off runs in real time
 * (from 50 ms), so the failing stores here recover after a try or two, or the phase stops the pauses.
 */
class StoreCallsTest {

    private final StageFixture f = new StageFixture("lease: 5s");
    private final StoreCalls calls = f.storeCalls;
    private final ExecutorService caller = Executors.newSingleThreadExecutor();

    @AfterEach
    void close() throws InterruptedException {
        f.state.phase = Phase.STOPPED;
        caller.shutdownNow();
        assertThat(caller.awaitTermination(5, TimeUnit.SECONDS)).isTrue();
        f.close();
    }

    private List<ClaimRequest> requests(Work... works) {
        return Arrays.stream(works)
                .map(w -> new ClaimRequest(w.storeKey, w.fingerprint, f.config.lease(), f.config.retention()))
                .toList();
    }

    @Test
    void aRetriableFailureMarksTheStoreDownUntilTheNextCallThatSucceeds() {
        Work w = f.work("k1", "p");
        StoreKey aggregate = new StoreKey("orders", "acc-1");
        assertThat(calls.isDown()).isFalse();
        f.store.fail("watermark", 1);

        assertThat(calls.watermark(w, aggregate)).as("a failure answers null").isNull();
        assertThat(calls.isDown()).isTrue();

        assertThat(calls.watermark(w, aggregate)).isZero();
        assertThat(calls.isDown()).isFalse();
    }

    @Test
    void aFailureThatIsNotRetriableDoesNotMarkTheStoreDown() {
        Work w = f.work("k1", "p");
        f.store.fail("watermark", 1, false);

        assertThat(calls.watermark(w, new StoreKey("orders", "acc-1"))).isNull();
        assertThat(calls.isDown()).isFalse();
    }

    @Test
    void aClaimIsTriedAgainWithBackOffUntilTheStoreAnswers() {
        Work first = f.work("k1", "p");
        Work second = f.work("k2", "p");
        f.store.fail("claim", 2);
        long start = System.nanoTime();

        List<ClaimResult> results = calls.claim(requests(first, second));

        long tookMillis = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - start);
        assertThat(results).hasSize(2).allSatisfy(r -> assertThat(r).isInstanceOf(ClaimResult.Acquired.class));
        assertThat(f.store.calls("claim")).isEqualTo(3);
        assertThat(tookMillis).as("backed off 50 ms, then 100 ms").isGreaterThanOrEqualTo(150);
        assertThat(calls.isDown()).isFalse();
    }

    @Test
    void aClaimGivesUpOnceThePipelineStopsRunning() {
        f.store.failAlways("claim");
        Work w = f.work("k1", "p");

        CompletableFuture<List<ClaimResult>> claimed = CompletableFuture.supplyAsync(() -> calls.claim(requests(w)),
                caller);
        await().until(() -> f.store.calls("claim") >= 2);
        assertThat(claimed).isNotDone();
        f.state.phase = Phase.DRAINING;

        assertThat(claimed).succeedsWithin(Duration.ofSeconds(2)).isNull();
        int triesWhenItGaveUp = f.store.calls("claim");
        assertThat(calls.isDown()).isTrue();
        assertThat(f.store.calls("claim")).as("no try after giving up").isEqualTo(triesWhenItGaveUp);
    }

    @Test
    void aClaimGivesUpAtTheFirstFailureWhenThePipelineIsNotRunning() {
        f.state.phase = Phase.DRAINING;
        f.store.fail("claim", 1);

        assertThat(calls.claim(requests(f.work("k1", "p")))).isNull();
        assertThat(f.store.calls("claim")).isEqualTo(1);
    }

    @Test
    void aCompletionOfTheOwnersKeyIsCompleted() {
        Work w = f.work("k1", "p");
        f.acquire(w);

        assertThat(calls.complete(w, null)).isEqualTo(Completion.COMPLETED);
        assertThat(calls.complete(w, null)).as("idempotent for its owner").isEqualTo(Completion.COMPLETED);
        assertThat(f.claimInStore(f.work("k1", "p"))).isEqualTo(new ClaimResult.Duplicate(true));
    }

    @Test
    void aCompletionWithAnAdvanceRaisesTheWatermark() {
        Work w = f.work("k1", "p");
        f.acquire(w);
        StoreKey aggregate = new StoreKey("orders", "acc-1");

        assertThat(calls.complete(w, new SequenceAdvance(aggregate, 4, Duration.ofDays(1))))
                .isEqualTo(Completion.COMPLETED);
        assertThat(f.store.real.watermark(aggregate)).isEqualTo(4);
    }

    @Test
    void aCompletionAfterATakeoverIsNotOwner() {
        Work w = f.work("k1", "p");
        f.acquire(w);
        f.takeOver(w);

        assertThat(calls.complete(w, null)).isEqualTo(Completion.NOT_OWNER);
        assertThat(calls.isDown()).isFalse();
        assertThat(f.claimInStore(f.work("k1", "p"))).as("the new owner keeps the key")
                .isInstanceOf(ClaimResult.InProgress.class);
    }

    @Test
    void aCompletionIsTriedAgainWhileTheStoreFails() {
        Work w = f.work("k1", "p");
        f.acquire(w);
        f.store.fail("complete", 2);

        assertThat(calls.complete(w, null)).isEqualTo(Completion.COMPLETED);
        assertThat(f.store.calls("complete")).isEqualTo(3);
        assertThat(calls.isDown()).isFalse();
    }

    @Test
    void aCompletionThatKeepsFailingAnswersFailedOnceItStopsTrying() {
        Work w = f.work("k1", "p");
        f.acquire(w);
        f.store.failAlways("complete");

        CompletableFuture<Completion> completed = CompletableFuture.supplyAsync(() -> calls.complete(w, null), caller);
        await().until(() -> f.store.calls("complete") >= 2);
        assertThat(completed).isNotDone();
        // Aborting ends the pauses, as the remaining tries would take seconds of real back-off.
        f.state.phase = Phase.ABORTING;

        assertThat(completed).succeedsWithin(Duration.ofSeconds(2)).isEqualTo(Completion.FAILED);
        assertThat(f.store.calls("complete")).isLessThan(StoreCalls.COMPLETE_TRIES);
        assertThat(calls.isDown()).isTrue();
        assertThat(f.claimInStore(f.work("k1", "p"))).as("still claimed, not completed")
                .isInstanceOf(ClaimResult.InProgress.class);
    }

    /**
     * Regression (a store outage re-ran handlers): a completion gave up after 8 tries, about 6 s, and the message
     * went back to run again once its lease ended, although nobody could take the key over while the store was
     * down. It is tried again, with the same token, for as long as the store is unreachable.
     */
    @Test
    void aCompletionIsTriedAgainForAsLongAsTheStoreIsUnreachableAndLandsWithItsToken() {
        StoreCalls quick = new StoreCalls(f.state, f.store, f.metrics, Duration.ofMillis(1), Duration.ofMillis(2));
        Work w = f.work("k1", "p");
        f.acquire(w);
        int outage = 3 * StoreCalls.COMPLETE_TRIES;
        f.store.fail("complete", outage);

        CompletableFuture<Completion> completed = CompletableFuture.supplyAsync(() -> quick.complete(w, null), caller);

        assertThat(completed).succeedsWithin(Duration.ofSeconds(10)).isEqualTo(Completion.COMPLETED);
        assertThat(f.store.calls("complete")).isEqualTo(outage + 1);
        assertThat(quick.isDown()).isFalse();
        assertThat(f.claimInStore(f.work("k1", "p"))).isEqualTo(new ClaimResult.Duplicate(true));
    }

    @Test
    void aCompletionThatFailsForAnotherReasonIsTriedItsTriesThenGivenUp() {
        StoreCalls quick = new StoreCalls(f.state, f.store, f.metrics, Duration.ofMillis(1), Duration.ofMillis(2));
        Work w = f.work("k1", "p");
        f.acquire(w);
        f.store.fail("complete", 100, false);

        assertThat(quick.complete(w, null)).isEqualTo(Completion.FAILED);
        assertThat(f.store.calls("complete")).isEqualTo(StoreCalls.COMPLETE_TRIES);
    }

    @Test
    void aBatchOfCompletionsIsTriedAgainForAsLongAsTheStoreIsUnreachable() {
        StoreCalls quick = new StoreCalls(f.state, f.store, f.metrics, Duration.ofMillis(1), Duration.ofMillis(2));
        Work a = f.work("k1", "p");
        Work b = f.work("k2", "p");
        f.acquire(a);
        f.acquire(b);
        int outage = 3 * StoreCalls.COMPLETE_TRIES;
        f.store.fail("completeAll", outage);
        List<String> answers = new CopyOnWriteArrayList<>();

        quick.completeAll(new ArrayList<>(List.of(a, b)), w -> null, room -> List.of(), 10,
                (w, completion) -> answers.add(w.key + " " + completion));

        assertThat(answers).containsExactlyInAnyOrder("k1 COMPLETED", "k2 COMPLETED");
        assertThat(f.store.calls("completeAll")).isEqualTo(outage + 1);
    }

    @Test
    void aRenewalAnswersRenewedTakenOverOrFailed() {
        Work w = f.work("k1", "p");
        f.acquire(w);

        assertThat(calls.renew(w)).isEqualTo(Renewal.RENEWED);
        f.store.fail("renew", 1);
        assertThat(calls.renew(w)).isEqualTo(Renewal.FAILED);
        f.takeOver(w);
        assertThat(calls.renew(w)).isEqualTo(Renewal.TAKEN_OVER);
    }

    @Test
    void aReleaseAnswersFalseOnlyWhenTheStoreFailed() {
        Work w = f.work("k1", "p");
        f.acquire(w);
        f.store.fail("release", 1);

        assertThat(calls.release(w)).isFalse();
        assertThat(calls.release(w)).isTrue();
        assertThat(f.claimInStore(f.work("k1", "p"))).isInstanceOf(ClaimResult.Acquired.class);
    }

    /**
     * A store that does not count starts answers {@link DedupStore#STARTS_NOT_RECORDED} (-1): that is an answer, to
     * count takeovers instead, not a failure, which answers {@code null} and hands the suspect back.
     */
    @Test
    void recordStartTellsAStoreThatDoesNotCountStartsFromAStoreThatFailed() {
        Work w = f.work("k1", "p");
        f.acquire(w);
        DedupStore notCounting = new DedupStore() {
            @Override
            public List<ClaimResult> claim(List<ClaimRequest> requests) {
                return f.store.claim(requests);
            }

            @Override
            public boolean complete(StoreKey key, long token, Duration retention) {
                return f.store.complete(key, token, retention);
            }

            @Override
            public boolean release(StoreKey key, long token) {
                return f.store.release(key, token);
            }

            @Override
            public boolean renew(StoreKey key, long token, Duration lease) {
                return f.store.renew(key, token, lease);
            }

            @Override
            public void close() {
            }
        };
        StoreCalls withoutStarts = new StoreCalls(f.state, notCounting, f.metrics);

        assertThat(withoutStarts.recordStart(w)).isNotNull().isEqualTo(DedupStore.STARTS_NOT_RECORDED);
        assertThat(withoutStarts.isDown()).isFalse();

        f.store.fail("recordStart", 1);
        assertThat(calls.recordStart(w)).as("a failure").isNull();
        assertThat(calls.isDown()).isTrue();
    }

    @Test
    void recordStartCountsTheStartsOfTheOwnerAndAnswersZeroToAnotherOwner() {
        Work w = f.work("k1", "p");
        f.acquire(w);

        assertThat(calls.recordStart(w)).isEqualTo(1);
        assertThat(calls.recordStart(w)).isEqualTo(2);
        f.takeOver(w);
        assertThat(calls.recordStart(w)).as("another owner has the key now").isZero();
        assertThat(calls.isDown()).isFalse();
    }
}
