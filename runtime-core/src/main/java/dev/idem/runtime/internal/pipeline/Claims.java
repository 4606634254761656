package dev.idem.runtime.internal.pipeline;

import dev.idem.runtime.config.PipelineConfig;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * The claim of a key and what its answer means, for the intake (a batch at a time) and for a worker whose work
 * was deferred and claims again: asks the store through {@link StoreCalls}, and turns each answer into a
 * {@link Verdict}, moving the work's {@link Claim} along and settling what needs no run (a duplicate, a key whose
 * fingerprint does not match). Thread-safe.
 */
final class Claims {

    /** What became of a work after its claim's answer. */
    enum Verdict {
        /** Run the handler (claimed, or to run unprotected). */
        RUN,
        /** Nothing to run: settled, or following the copy this pipeline holds. */
        DONE,
        /**
         * Another owner holds the key: wait until {@link Claim#deferredUntil} (a short, growing back-off, at most
         * until the owner's lease ends), then claim again.
         */
        DEFER,
        /** Ask the store once more before deferring: the local holder may have just finished. */
        RECHECK
    }

    /** The first re-check of a key another owner holds; each later one waits twice as long. */
    static final long RECHECK_FIRST_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    private final PipelineState s;
    private final PipelineConfig config;
    private final StoreCalls store;
    private final InFlight inFlight;
    private final Outcomes outcomes;
    private final Settlement settle;

    Claims(PipelineState state, StoreCalls store, InFlight inFlight, Outcomes outcomes, Settlement settle) {
        this.s = state;
        this.config = state.config;
        this.store = store;
        this.inFlight = inFlight;
        this.outcomes = outcomes;
        this.settle = settle;
    }

    ClaimRequest request(Work w) {
        return new ClaimRequest(w.storeKey, w.fingerprint, config.lease(), config.retention());
    }

    /** The store's answers, in order; {@code null} when the store stayed unavailable (see {@link StoreCalls#claim}). */
    List<ClaimResult> claim(List<ClaimRequest> requests) {
        return store.claim(requests);
    }

    /**
     * What to do with a copy of a key this pipeline holds live now, instead of claiming it: follow the holder (same
     * payload: acked as a duplicate when the holder is acked, handed back with it otherwise), or wait and ask again
     * later ({@link Verdict#DEFER}, another payload under the held key). Never claim it: while the holder's completion
     * waits for a store slower than the lease (an outage, replies arriving late), the holder's lease may have run
     * out, and the store would then answer this copy {@code ACQUIRED}, a takeover of the holder's own claim, and run
     * the handler a second time. {@code null} when this pipeline holds no live claim of the key.
     */
    Verdict heldHere(Work w) {
        Work holder = inFlight.holder(w.key);
        if (holder == null || holder == w || holder.isSettled()) {
            return null;
        }
        if (Objects.equals(holder.fingerprint, w.fingerprint)) {
            // Refused only when the holder settled meanwhile: then the key is free to claim.
            return holder.addFollower(w) ? Verdict.DONE : null;
        }
        if (w.claim.deferrals() == 0) {
            outcomes.deferred.count(w);
        }
        w.claim.deferUntil(s.now() + (RECHECK_FIRST_NANOS << Math.min(w.claim.deferrals(), 20)));
        return Verdict.DEFER;
    }

    /**
     * Acts on one claim result.
     *
     * @param askedAt the ticker's reading taken before the store was asked: a lease it granted began no earlier
     */
    Verdict apply(Work w, ClaimResult result, boolean mayRecheck, long askedAt) {
        if (result instanceof ClaimResult.Acquired acquired) {
            w.claim.acquired(acquired.token(), acquired.attempt(), askedAt);
            inFlight.hold(w);
            return Verdict.RUN;
        }
        if (result instanceof ClaimResult.Duplicate duplicate) {
            w.claim.settledByStore();
            return onDuplicate(w, duplicate.fingerprintMatches()) ? Verdict.RUN : Verdict.DONE;
        }
        ClaimResult.InProgress inProgress = (ClaimResult.InProgress) result;
        Work holder = inFlight.holder(w.key);
        if (holder != null && holder != w && Objects.equals(holder.fingerprint, w.fingerprint)
                && holder.addFollower(w)) {
            return Verdict.DONE;
        }
        if (mayRecheck && (holder == null || holder.isSettled())) {
            return Verdict.RECHECK;
        }
        if (w.claim.deferrals() == 0) {
            outcomes.deferred.count(w);
        }
        // The other owner usually finishes within milliseconds (a concurrent copy, a retry): ask again soon,
        // backing off, and never later than when its lease ends, where a takeover becomes possible.
        long leaseLeft = Math.max(1, inProgress.retryAfter().toNanos());
        long recheck = RECHECK_FIRST_NANOS << Math.min(w.claim.deferrals(), 20);
        w.claim.deferUntil(s.now() + Math.min(leaseLeft, recheck));
        return Verdict.DEFER;
    }

    /** Settles a duplicate by the fingerprint policy; true if it is to run unprotected instead. */
    boolean onDuplicate(Work w, boolean fingerprintMatches) {
        if (fingerprintMatches) {
            settle.ack(w, outcomes.duplicate);
            return false;
        }
        outcomes.fingerprintMismatch.count(w);
        switch (config.fingerprintMismatch()) {
            case SKIP -> {
                settle.ack(w, outcomes.duplicate);
                return false;
            }
            case PROCESS -> {
                // The key belongs to the completed message: run this one without a claim.
                w.storeKey = null;
                outcomes.unprotected.count(w);
                return true;
            }
            default -> {
                settle.deadLetter(w, "fingerprint-mismatch", "the key '" + w.key
                        + "' was completed for a message with another payload", 0);
                return false;
            }
        }
    }
}
