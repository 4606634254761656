package dev.idem.runtime.pipeline;

import dev.idem.runtime.config.PipelineConfig;
import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.ConfigKey;
import dev.idem.spi.StoreException;
import java.time.Duration;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Asks the store for claims and acts on its answers, for the intake (a batch at a time) and for a
 * deferred work claiming again. Thread-safe.
 */
final class Claims {

    private static final Logger log = LoggerFactory.getLogger(Claims.class);

    /** What became of a work after its claim's answer. */
    enum Verdict {
        /** Run the handler (claimed, or to run unprotected). */
        RUN,
        /** Nothing to run: settled, or following the copy this pipeline holds. */
        DONE,
        /**
         * Another owner holds the key: wait until {@link Work#deferredUntil} (a short, growing back-off, at most
         * until the owner's lease ends), then claim again.
         */
        DEFER,
        /** Ask the store once more before deferring: the local holder may have just finished. */
        RECHECK
    }

    /** The first re-check of a key another owner holds; each later one waits twice as long. */
    static final long RECHECK_FIRST_NANOS = TimeUnit.MILLISECONDS.toNanos(10);

    private final PipelineState s;
    private final Settlement settle;
    private final PipelineConfig config;

    Claims(PipelineState state, Settlement settle) {
        this.s = state;
        this.settle = settle;
        this.config = state.config;
    }

    ClaimRequest request(Work w) {
        return new ClaimRequest(w.storeKey, w.fingerprint, config.lease(), config.retention());
    }

    /**
     * Claims in one call, retrying a failing store with back-off; {@code null} if it stayed unavailable.
     * Blocks the calling thread (the adapter's, or a worker's) while the store is down.
     */
    List<ClaimResult> claimWithRetry(List<ClaimRequest> requests) {
        long giveUpAt = System.nanoTime() + Math.min(config.lease().toNanos(), TimeUnit.SECONDS.toNanos(30));
        Duration backoff = PipelineTiming.STORE_BACKOFF_MIN;
        while (true) {
            long start = System.nanoTime();
            try {
                List<ClaimResult> results = s.store.claim(requests);
                s.metrics.claim.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                s.storeDown = false;
                if (results.size() != requests.size()) {
                    throw new StoreException("The store answered " + results.size() + " results for a batch of "
                            + requests.size() + " claims", false);
                }
                return results;
            } catch (StoreException e) {
                s.metrics.claim.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                s.storeDown |= e.retriable();
                if (!s.running() || System.nanoTime() + backoff.toNanos() - giveUpAt > 0) {
                    log.warn("Pipeline '{}': the store could not claim a batch of {} ({}); handing it back to the"
                            + " broker unacked", s.name, requests.size(), e.getMessage());
                    s.metrics.storeUnavailable.count(requests.size());
                    return null;
                }
                log.warn("Pipeline '{}': the store could not claim a batch of {} ({}); retrying in {}", s.name,
                        requests.size(), e.getMessage(), ConfigKey.formatDuration(backoff));
                if (!PipelineTiming.pause(backoff, s::aborting)) {
                    s.metrics.storeUnavailable.count(requests.size());
                    return null;
                }
                backoff = backoff.multipliedBy(2).compareTo(PipelineTiming.STORE_BACKOFF_MAX) > 0
                        ? PipelineTiming.STORE_BACKOFF_MAX : backoff.multipliedBy(2);
            }
        }
    }

    /** Acts on one claim result. */
    Verdict apply(Work w, ClaimResult result, boolean mayRecheck) {
        if (result instanceof ClaimResult.Acquired acquired) {
            w.claimed = true;
            w.claimPending = false;
            w.token = acquired.token();
            w.storeAttempt = acquired.attempt();
            w.suspect = acquired.attempt() > 1;
            w.leaseRenewedAtNanos = s.now();
            s.heldKeys.put(w.key, w);
            return Verdict.RUN;
        }
        if (result instanceof ClaimResult.Duplicate duplicate) {
            w.claimPending = false;
            return onDuplicate(w, duplicate.fingerprintMatches()) ? Verdict.RUN : Verdict.DONE;
        }
        ClaimResult.InProgress inProgress = (ClaimResult.InProgress) result;
        Work holder = s.heldKeys.get(w.key);
        if (holder != null && holder != w && Objects.equals(holder.fingerprint, w.fingerprint)
                && holder.addFollower(w)) {
            return Verdict.DONE;
        }
        if (mayRecheck && (holder == null || holder.isSettled())) {
            return Verdict.RECHECK;
        }
        if (w.deferrals == 0) {
            s.metrics.deferred.count(w);
        }
        // The other owner usually finishes within milliseconds (a concurrent copy, a retry): ask again soon,
        // backing off, and never later than when its lease ends, where a takeover becomes possible.
        long leaseLeft = Math.max(1, inProgress.retryAfter().toNanos());
        long recheck = RECHECK_FIRST_NANOS << Math.min(w.deferrals, 20);
        w.deferrals++;
        w.claimPending = true;
        w.deferredUntil = s.now() + Math.min(leaseLeft, recheck);
        return Verdict.DEFER;
    }

    /** Settles a duplicate by the fingerprint policy; true if it is to run unprotected instead. */
    boolean onDuplicate(Work w, boolean fingerprintMatches) {
        if (fingerprintMatches) {
            s.metrics.duplicate.count(w);
            settle.ack(w);
            return false;
        }
        s.metrics.fingerprintMismatch.count(w);
        switch (config.fingerprintMismatch()) {
            case SKIP -> {
                s.metrics.duplicate.count(w);
                settle.ack(w);
                return false;
            }
            case PROCESS -> {
                // The key belongs to the completed message: run this one without a claim.
                w.storeKey = null;
                s.metrics.unprotected.count(w);
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
