package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.StageFixture.delivery;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.runtime.internal.pipeline.StageFixture.RecordingSlot;
import dev.idem.spi.BrokerException;
import dev.idem.spi.ClaimResult;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link Settlement} on its own: each delivery settled once, what it held in flight given back, the hand-back
 * leaving its key's queue, followers sharing the outcome, the claim released before a dead letter (or the message
 * handed back when it cannot be), and the outcome counted.
 */
class SettlementTest {

    private final StageFixture f = new StageFixture("max-in-flight: 10");
    private final Settlement settle = f.settlement;

    @AfterEach
    void close() {
        f.close();
    }

    @Test
    void aDeliveryIsSettledOnceWhateverIsCalledAfter() throws InterruptedException {
        Work acked = f.admitted("k1", "p");
        f.acquire(acked);
        settle.ack(acked, f.outcomes.processed);
        settle.ack(acked, f.outcomes.processed);
        settle.retryLater(acked, Duration.ZERO);
        settle.deadLetter(acked, "handler-failed", "late", 1);
        settle.abandon(acked);

        Work handedBack = f.admitted("k2", "p");
        settle.retryLater(handedBack, Duration.ofSeconds(1));
        settle.ack(handedBack, f.outcomes.processed);
        settle.deadLetter(handedBack, "handler-failed", "late", 1);

        Work deadLettered = f.admitted("k3", "p");
        settle.deadLetter(deadLettered, "handler-failed", "boom", 3);
        settle.deadLetter(deadLettered, "handler-failed", "boom", 3);
        settle.ack(deadLettered, f.outcomes.processed);
        settle.retryLater(deadLettered, Duration.ZERO);

        assertThat(delivery(acked).settlements).containsExactly("ack");
        assertThat(delivery(handedBack).settlements).containsExactly("retryLater(PT1S)");
        assertThat(delivery(deadLettered).settlements).containsExactly("deadLetter(handler-failed)");
        assertThat(f.inFlight.count()).as("each gave its room back once").isZero();
    }

    @Test
    void aDeliveryIsCountedOnlyForTheOutcomeItWasSettledWith() throws InterruptedException {
        Work w = f.admitted("k1", "p");
        settle.ack(w, f.outcomes.processed);
        settle.ack(w, f.outcomes.processed);
        settle.retryLater(w, Duration.ZERO, f.outcomes.leaseLost);
        settle.deadLetter(w, "handler-failed", "late", 1);

        assertThat(delivery(w).settlements).containsExactly("ack");
        assertThat(f.count("processed")).isEqualTo(1);
        assertThat(f.count("lease-lost")).isZero();
        assertThat(f.count("dead-lettered")).isZero();
        assertThat(w.outcome).as("the outcome its span reports").isEqualTo("processed");
    }

    @Test
    void settlingGivesBackTheRoomTheHeldKeyAndTheBatchShare() throws InterruptedException {
        Work first = f.admitted("k1", "p");
        Work second = f.admitted("k2", "p");
        f.acquire(first);
        f.acquire(second);
        long dispatchedAt = f.ticker.getAsLong();
        f.inFlight.track(new Batch(List.of(first, second), dispatchedAt));
        assertThat(f.inFlight.count()).isEqualTo(2);

        settle.ack(first, f.outcomes.processed);

        assertThat(f.inFlight.count()).isEqualTo(1);
        assertThat(f.inFlight.holder("k1")).isNull();
        assertThat(f.inFlight.holder("k2")).isSameAs(second);
        assertThat(unsettled()).containsExactly(second);
        assertThat(f.inFlight.oldestDispatch()).as("the batch is watched while one of it is unsettled")
                .isEqualTo(dispatchedAt);

        settle.retryLater(second, Duration.ZERO);

        assertThat(f.inFlight.count()).isZero();
        assertThat(f.inFlight.holder("k2")).isNull();
        assertThat(unsettled()).isEmpty();
        assertThat(f.inFlight.oldestDispatch()).isEqualTo(Long.MAX_VALUE);
    }

    @Test
    void aSettledWorkDoesNotDropTheKeyAnotherWorkHoldsNow() throws InterruptedException {
        Work earlier = f.admitted("k1", "p");
        Work holder = f.admitted("k1", "p");
        f.inFlight.hold(holder);

        settle.ack(earlier, f.outcomes.duplicate);

        assertThat(f.inFlight.holder("k1")).isSameAs(holder);
    }

    @Test
    void aHandedBackWorkLeavesItsKeysQueueKeepsItsClaimAndHandsItsFollowersBack() {
        Work w = f.work("k1", "p");
        f.acquire(w);
        RecordingSlot slot = new RecordingSlot();
        w.slot = slot;
        Work follower = f.work("k1", "p");
        assertThat(w.addFollower(follower)).isTrue();

        settle.retryLater(w, Duration.ofMillis(250), f.outcomes.storeUnavailable);

        assertThat(slot.calls).containsExactly("detach");
        assertThat(delivery(w).settlements).containsExactly("retryLater(PT0.25S)");
        assertThat(delivery(follower).settlements).containsExactly("retryLater(PT0S)");
        assertThat(f.count("store-unavailable")).isEqualTo(1);
        assertThat(f.count("duplicate")).as("a follower shares only a completed outcome").isZero();
        assertThat(w.claim.held()).as("the claim is kept").isTrue();
        assertThat(f.store.calls("release")).isZero();
        assertThat(f.claimInStore(f.work("k1", "p"))).isInstanceOf(ClaimResult.InProgress.class);
        assertThat(w.addFollower(f.work("k1", "p"))).as("no follower attaches once settled").isFalse();
    }

    @Test
    void anAckAcksTheFollowersAsDuplicates() {
        Work w = f.work("k1", "p");
        Work first = f.work("k1", "p");
        Work second = f.work("k1", "p");
        w.addFollower(first);
        w.addFollower(second);

        settle.ack(w, f.outcomes.processed);

        assertThat(delivery(first).settlements).containsExactly("ack");
        assertThat(delivery(second).settlements).containsExactly("ack");
        assertThat(f.count("processed")).isEqualTo(1);
        assertThat(f.count("duplicate")).isEqualTo(2);
        assertThat(first.outcome).isEqualTo("duplicate");
    }

    @Test
    void aDeadLetterReleasesTheClaimFirstThenHandsTheFollowersBack() {
        Work w = f.work("k1", "p");
        f.acquire(w);
        Work follower = f.work("k1", "p");
        w.addFollower(follower);

        settle.deadLetter(w, "handler-failed", "java.lang.IllegalStateException: boom", 3);

        assertThat(f.events).containsSubsequence("release k1", "deadLetter k1", "retryLater k1");
        assertThat(delivery(w).settlements).containsExactly("deadLetter(handler-failed)");
        assertThat(delivery(w).deadLetter.detail()).isEqualTo("java.lang.IllegalStateException: boom");
        assertThat(delivery(w).deadLetter.attempts()).isEqualTo(3);
        assertThat(delivery(w).deadLetter.pipeline()).isEqualTo("orders");
        assertThat(delivery(follower).settlements).containsExactly("retryLater(PT0S)");
        assertThat(w.claim.held()).isFalse();
        assertThat(f.count("dead-lettered")).isEqualTo(1);
        ClaimResult replay = f.claimInStore(f.work("k1", "p"));
        assertThat(replay).as("a replay from the dead-letter destination is claimed afresh")
                .isInstanceOf(ClaimResult.Acquired.class);
        assertThat(((ClaimResult.Acquired) replay).attempt()).isEqualTo(1);
    }

    @Test
    void aDeadLetterWhoseClaimCannotBeReleasedGoesBackWithTheLongestBackOffInstead() {
        Work w = f.work("k1", "p");
        f.acquire(w);
        RecordingSlot slot = new RecordingSlot();
        w.slot = slot;
        f.store.fail("release", 1);

        settle.deadLetter(w, "handler-failed", "boom", 3);

        assertThat(delivery(w).settlements).containsExactly("retryLater(" + StoreCalls.BACKOFF_MAX + ")");
        assertThat(delivery(w).deadLetter).isNull();
        assertThat(slot.calls).containsExactly("detach");
        assertThat(w.claim.held()).as("left to run out").isTrue();
        assertThat(f.count("dead-lettered")).isZero();
    }

    @Test
    void aDeadLetterWithoutAClaimAsksNothingOfTheStore() {
        Work w = f.work("k1", "p");

        settle.deadLetter(w, "missing-id", "no key", 0);

        assertThat(delivery(w).settlements).containsExactly("deadLetter(missing-id)");
        assertThat(f.store.calls("release")).isZero();
        assertThat(f.count("dead-lettered")).isEqualTo(1);
    }

    @Test
    void abandonReleasesTheClaimAndHandsTheMessageBack() {
        Work w = f.work("k1", "p");
        f.acquire(w);
        RecordingSlot slot = new RecordingSlot();
        w.slot = slot;

        settle.abandon(w);

        assertThat(f.events).containsSubsequence("release k1", "retryLater k1");
        assertThat(delivery(w).settlements).containsExactly("retryLater(PT0S)");
        assertThat(slot.calls).containsExactly("detach");
        assertThat(w.claim.held()).isFalse();
        assertThat(f.claimInStore(f.work("k1", "p"))).isInstanceOf(ClaimResult.Acquired.class);
    }

    @Test
    void abandonHandsTheMessageBackEvenWhenTheStoreCannotRelease() {
        Work w = f.work("k1", "p");
        f.acquire(w);
        f.store.fail("release", 1);

        settle.abandon(w, Duration.ofSeconds(2));

        assertThat(delivery(w).settlements).containsExactly("retryLater(PT2S)");
        assertThat(w.claim.held()).as("its lease runs out on its own").isTrue();
    }

    @Test
    void aBrokerThatRefusesTheAckStillSettlesTheWorkOnce() throws InterruptedException {
        Work plain = f.work("k1", "p");
        f.inFlight.admit(1);
        Work w = new Work(new StageFixture.RecordingDelivery(plain.message, "k1", f.events) {
            @Override
            public void ack() {
                super.ack();
                throw new BrokerException("connection lost (test)", true);
            }
        });
        w.key = "k1";
        w.counted = true;
        f.inFlight.hold(w);

        settle.ack(w, f.outcomes.processed);
        settle.ack(w, f.outcomes.processed);

        assertThat(delivery(w).settlements).containsExactly("ack");
        assertThat(f.inFlight.holder("k1")).isNull();
        assertThat(f.inFlight.count()).isZero();
    }

    private List<Work> unsettled() {
        List<Work> works = new ArrayList<>();
        f.inFlight.forEachUnsettled(works::add);
        return works;
    }
}
