package dev.idem.runtime.internal.pipeline;

import static dev.idem.runtime.internal.pipeline.StageFixture.delivery;
import static org.assertj.core.api.Assertions.assertThat;

import dev.idem.runtime.internal.pipeline.Claims.Verdict;
import dev.idem.spi.ClaimResult;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;

/**
 * {@link Claims} on its own: what each answer of the store makes of a work (its {@link Claim}, the key held in
 * flight, a settlement, a follower, a deferral and its back-off), against the Caffeine store on a manual ticker.
 */
class ClaimsTest {

    private StageFixture f;

    @AfterEach
    void close() {
        if (f != null) {
            f.close();
        }
    }

    private Claims claims(String settings) {
        f = new StageFixture(settings);
        return new Claims(f.state, f.storeCalls, f.inFlight, f.outcomes, f.settlement);
    }

    /** Asks the store through the stage, as the intake does, and applies the single answer. */
    private Verdict claimAndApply(Claims claims, Work w, boolean mayRecheck) {
        long askedAt = f.ticker.getAsLong();
        List<ClaimResult> results = claims.claim(List.of(claims.request(w)));
        assertThat(results).hasSize(1);
        return claims.apply(w, results.get(0), mayRecheck, askedAt);
    }

    @Test
    void anAcquiredKeyIsHeldUnderTheStoresTokenAndAttempt() {
        Claims claims = claims("");
        Work w = f.work("k1", "p");

        long askedAt = f.ticker.getAsLong();
        List<ClaimResult> results = claims.claim(List.of(claims.request(w)));
        Verdict verdict = claims.apply(w, results.get(0), true, askedAt);

        assertThat(verdict).isEqualTo(Verdict.RUN);
        ClaimResult.Acquired acquired = (ClaimResult.Acquired) results.get(0);
        assertThat(w.claim.held()).isTrue();
        assertThat(w.claim.token()).isEqualTo(acquired.token());
        assertThat(w.claim.storeAttempt()).isEqualTo(1);
        assertThat(w.claim.suspect()).as("a fresh key is no suspect").isFalse();
        assertThat(w.claim.pending()).isFalse();
        assertThat(w.claim.leaseRenewedAtNanos()).as("the lease began no earlier than the store was asked")
                .isEqualTo(askedAt);
        assertThat(f.inFlight.holder("k1")).isSameAs(w);
        assertThat(delivery(w).settled()).isFalse();
    }

    @Test
    void aKeyTakenOverAfterALeaseRanOutIsASuspect() {
        Claims claims = claims("lease: 1s");
        Work crashed = f.work("k1", "p");
        f.claimInStore(crashed);
        f.ticker.advance(Duration.ofMillis(1001));
        Work w = f.work("k1", "p");

        Verdict verdict = claimAndApply(claims, w, true);

        assertThat(verdict).isEqualTo(Verdict.RUN);
        assertThat(w.claim.storeAttempt()).isEqualTo(2);
        assertThat(w.claim.suspect()).isTrue();
        assertThat(w.attempt()).as("the handler sees the crashed run counted").isEqualTo(1);
        assertThat(f.inFlight.holder("k1")).isSameAs(w);
    }

    @Test
    void aDuplicateIsAckedAndCountedWithoutHoldingTheKey() {
        Claims claims = claims("");
        f.completedEarlier("k1", "p");
        Work w = f.work("k1", "p");

        Verdict verdict = claimAndApply(claims, w, true);

        assertThat(verdict).isEqualTo(Verdict.DONE);
        assertThat(delivery(w).settlements).containsExactly("ack");
        assertThat(f.count("duplicate")).isEqualTo(1);
        assertThat(f.count("fingerprint-mismatch")).isZero();
        assertThat(w.claim.held()).isFalse();
        assertThat(f.inFlight.holder("k1")).isNull();
    }

    @Test
    void aFingerprintMismatchIsDeadLetteredByDefault() {
        Claims claims = claims("");
        f.completedEarlier("k1", "first payload");
        Work w = f.work("k1", "another payload");

        Verdict verdict = claimAndApply(claims, w, true);

        assertThat(verdict).isEqualTo(Verdict.DONE);
        assertThat(delivery(w).settlements).containsExactly("deadLetter(fingerprint-mismatch)");
        assertThat(delivery(w).deadLetter.detail()).contains("'k1'").contains("another payload");
        assertThat(delivery(w).deadLetter.pipeline()).isEqualTo("orders");
        assertThat(f.count("fingerprint-mismatch")).isEqualTo(1);
        assertThat(f.count("dead-lettered")).isEqualTo(1);
        assertThat(f.count("duplicate")).isZero();
        assertThat(f.store.calls("release")).as("no claim was held, so none is released").isZero();
    }

    @Test
    void aFingerprintMismatchIsAckedAsADuplicateUnderSkip() {
        Claims claims = claims("fingerprint-mismatch: skip");
        f.completedEarlier("k1", "first payload");
        Work w = f.work("k1", "another payload");

        Verdict verdict = claimAndApply(claims, w, true);

        assertThat(verdict).isEqualTo(Verdict.DONE);
        assertThat(delivery(w).settlements).containsExactly("ack");
        assertThat(f.count("fingerprint-mismatch")).isEqualTo(1);
        assertThat(f.count("duplicate")).isEqualTo(1);
        assertThat(f.count("dead-lettered")).isZero();
    }

    @Test
    void aFingerprintMismatchRunsUnprotectedUnderProcess() {
        Claims claims = claims("fingerprint-mismatch: process");
        f.completedEarlier("k1", "first payload");
        Work w = f.work("k1", "another payload");

        Verdict verdict = claimAndApply(claims, w, true);

        assertThat(verdict).isEqualTo(Verdict.RUN);
        assertThat(w.storeKey).as("the key belongs to the completed message").isNull();
        assertThat(w.claim.held()).isFalse();
        assertThat(delivery(w).settled()).isFalse();
        assertThat(f.count("fingerprint-mismatch")).isEqualTo(1);
        assertThat(f.count("unprotected")).isEqualTo(1);
    }

    @Test
    void aCopyOfAKeyHeldHereFollowsItsHolderAndIsAckedAsADuplicateWithIt() {
        Claims claims = claims("");
        Work holder = f.work("k1", "p");
        assertThat(claimAndApply(claims, holder, true)).isEqualTo(Verdict.RUN);
        Work copy = f.work("k1", "p");

        Verdict verdict = claimAndApply(claims, copy, true);

        assertThat(verdict).isEqualTo(Verdict.DONE);
        assertThat(holder.followers()).containsExactly(copy);
        assertThat(delivery(copy).settled()).isFalse();
        assertThat(f.count("deferred")).isZero();

        f.settlement.ack(holder, f.outcomes.processed);

        assertThat(delivery(holder).settlements).containsExactly("ack");
        assertThat(delivery(copy).settlements).containsExactly("ack");
        assertThat(f.count("processed")).isEqualTo(1);
        assertThat(f.count("duplicate")).isEqualTo(1);
    }

    @Test
    void aCopyWithAnotherPayloadDoesNotFollowTheHolderButDefers() {
        Claims claims = claims("");
        Work holder = f.work("k1", "p");
        claimAndApply(claims, holder, true);
        Work other = f.work("k1", "another payload");

        Verdict verdict = claimAndApply(claims, other, true);

        assertThat(verdict).as("a live holder here: no re-check, the key is busy").isEqualTo(Verdict.DEFER);
        assertThat(holder.followers()).isEmpty();
        assertThat(other.claim.pending()).isTrue();
        assertThat(f.count("deferred")).isEqualTo(1);
    }

    @Test
    void aKeyInProgressWithNoHolderHereIsRecheckedWhenAllowed() {
        Claims claims = claims("");
        Work elsewhere = f.work("k1", "p");
        f.claimInStore(elsewhere);
        Work w = f.work("k1", "p");

        Verdict verdict = claimAndApply(claims, w, true);

        assertThat(verdict).isEqualTo(Verdict.RECHECK);
        assertThat(w.claim.pending()).isFalse();
        assertThat(w.claim.deferrals()).isZero();
        assertThat(f.count("deferred")).as("nothing counted before the re-check").isZero();
        assertThat(delivery(w).settled()).isFalse();
    }

    @Test
    void aKeyInProgressElsewhereIsDeferredTenMillisecondsThenTwiceAsLongEachTimeCountedOnce() {
        Claims claims = claims("lease: 30s");
        f.claimInStore(f.work("k1", "p"));
        Work w = f.work("k1", "p");

        long first = TimeUnit.MILLISECONDS.toNanos(10);
        for (int i = 0; i < 5; i++) {
            long now = f.ticker.getAsLong();
            Verdict verdict = claimAndApply(claims, w, false);

            assertThat(verdict).isEqualTo(Verdict.DEFER);
            assertThat(w.claim.pending()).isTrue();
            assertThat(w.claim.deferredUntil() - now).as("deferral %s", i + 1).isEqualTo(first << i);
            f.ticker.advance(Duration.ofNanos(first << i));
        }
        assertThat(w.claim.deferrals()).isEqualTo(5);
        assertThat(f.count("deferred")).isEqualTo(1);
        assertThat(w.claim.held()).isFalse();
        assertThat(f.inFlight.holder("k1")).isNull();
        assertThat(delivery(w).settled()).isFalse();
    }

    @Test
    void aDeferralNeverWaitsPastTheOtherOwnersLease() {
        Claims claims = claims("lease: 1s");
        f.claimInStore(f.work("k1", "p"));
        Work w = f.work("k1", "p");
        // Back-offs of 10, 20, 40, 80, 160 and 320 ms; the next, 640 ms, would pass the lease's end.
        for (int i = 0; i < 6; i++) {
            claimAndApply(claims, w, false);
            f.ticker.advance(Duration.ofNanos(w.claim.deferredUntil() - f.ticker.getAsLong()));
        }
        long now = f.ticker.getAsLong();
        long leaseLeft = TimeUnit.MILLISECONDS.toNanos(1000 - 630);

        ClaimResult answer = claims.claim(List.of(claims.request(w))).get(0);
        assertThat(((ClaimResult.InProgress) answer).retryAfter()).isEqualTo(Duration.ofNanos(leaseLeft));
        Verdict verdict = claims.apply(w, answer, false, now);

        assertThat(verdict).isEqualTo(Verdict.DEFER);
        assertThat(w.claim.deferredUntil() - now).isEqualTo(leaseLeft);
        assertThat(f.count("deferred")).isEqualTo(1);
    }

    @Test
    void aDeferredKeyIsAcquiredOnceTheOtherOwnersLeaseEnded() {
        Claims claims = claims("lease: 1s");
        f.claimInStore(f.work("k1", "p"));
        Work w = f.work("k1", "p");
        assertThat(claimAndApply(claims, w, false)).isEqualTo(Verdict.DEFER);

        f.ticker.advance(Duration.ofMillis(1001));
        Verdict verdict = claimAndApply(claims, w, false);

        assertThat(verdict).isEqualTo(Verdict.RUN);
        assertThat(w.claim.pending()).as("no longer deferred").isFalse();
        assertThat(w.claim.held()).isTrue();
        assertThat(w.claim.suspect()).as("taken over from an owner whose lease ran out").isTrue();
        assertThat(f.inFlight.holder("k1")).isSameAs(w);
    }
}
