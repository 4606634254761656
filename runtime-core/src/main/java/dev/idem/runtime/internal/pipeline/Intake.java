package dev.idem.runtime.internal.pipeline;

import dev.idem.spi.ClaimRequest;
import dev.idem.spi.ClaimResult;
import dev.idem.spi.Delivery;
import java.time.Duration;
import dev.idem.runtime.config.PipelineConfig.FingerprintMode;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The first stage: takes a batch from the adapter's thread, waits for room under the in-flight
 * bound, finds each message's idempotency and ordering keys, claims the batch's keys in one store
 * call, settles what needs no run (duplicates, bad keys) and hands the rest to the scheduler.
 */
final class Intake {

    private static final Logger log = LoggerFactory.getLogger(Intake.class);

    private final PipelineState s;
    private final InFlight inFlight;
    private final KeyResolver keys;
    private final OrderKeys orderKeys;
    private final Claims claims;
    private final Outcomes outcomes;
    private final Settlement settle;
    private final KeyScheduler scheduler;
    private final boolean fingerprinting;
    /** The sequence guard, or {@code null}. */
    private final Sequences sequences;

    Intake(PipelineState state, InFlight inFlight, KeyResolver keys, OrderKeys orderKeys, Claims claims,
            Outcomes outcomes, Settlement settle, KeyScheduler scheduler, Sequences sequences) {
        this.s = state;
        this.inFlight = inFlight;
        this.sequences = sequences;
        this.keys = keys;
        this.orderKeys = orderKeys;
        this.claims = claims;
        this.outcomes = outcomes;
        this.settle = settle;
        this.scheduler = scheduler;
        this.fingerprinting = state.config.fingerprint() == FingerprintMode.SHA256;
    }

    /** Called on the adapter's thread; blocks while the pipeline is full. Never throws. */
    void onDeliveries(List<Delivery> batch) {
        if (batch.isEmpty()) {
            return;
        }
        if (!s.running()) {
            handBackUncounted(batch);
            return;
        }
        try {
            inFlight.admit(batch.size());
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            handBackUncounted(batch);
            return;
        }
        Work[] works = new Work[batch.size()];
        for (int i = 0; i < works.length; i++) {
            works[i] = new Work(batch.get(i));
            works[i].counted = true;
            s.tracing.received(works[i]);
        }
        if (!s.running()) {
            // Stopped while this batch waited for room: hand it back untouched.
            for (Work w : works) {
                settle.retryLater(w, Duration.ZERO);
            }
            return;
        }
        try {
            process(works);
        } catch (RuntimeException | Error e) {
            // A bug of ours must neither kill the adapter's thread nor leave deliveries unsettled.
            log.error("Pipeline '{}' failed to process a batch of {}; handing unsettled deliveries back", s.name,
                    batch.size(), e);
            for (Work w : works) {
                if (w.batch == null) {
                    settle.abandon(w);
                }
            }
        }
    }

    private void handBackUncounted(List<Delivery> batch) {
        for (Delivery d : batch) {
            settle.retryLater(new Work(d), Duration.ZERO);
        }
    }

    private void process(Work[] works) {
        int n = works.length;
        List<ClaimRequest> requests = new ArrayList<>(n);
        List<Work> claiming = new ArrayList<>(n);
        // A key repeated within the batch follows its first copy's outcome instead of being deferred
        // by the store for a whole lease.
        Map<String, Work> firstCopies = n > 1 ? new HashMap<>(n * 2) : null;
        for (Work w : works) {
            keys.resolve(w);
            if (w.key != null && sequences != null) {
                sequences.resolve(w);
                if (w.rejectCause != null) {
                    w.key = null;
                }
            }
            if (w.key != null) {
                w.storeKey = s.storeKey(w.key);
                w.fingerprint = fingerprinting ? Fingerprints.sha256(w.message.payload()) : null;
                if (firstCopies != null) {
                    Work first = firstCopies.putIfAbsent(w.key, w);
                    // Refused when the first copy, itself a follower of a holder from an earlier batch, was
                    // settled with that holder meanwhile: this copy then goes its own way.
                    if (first != null && Objects.equals(first.fingerprint, w.fingerprint)) {
                        if (first.addFollower(w)) {
                            continue;
                        }
                        firstCopies.put(w.key, w);
                    }
                }
                // A copy of a key this pipeline holds from an earlier batch follows or waits for that holder.
                Claims.Verdict local = claims.heldHere(w);
                if (local != null) {
                    w.dispatched = local == Claims.Verdict.DEFER;
                    continue;
                }
                requests.add(claims.request(w));
                claiming.add(w);
            } else if (w.rejectCause == null) {
                outcomes.unprotected.count(w);
                w.dispatched = true;
            } else {
                settle.deadLetter(w, w.rejectCause, w.rejectDetail, 0);
            }
        }
        if (!requests.isEmpty()) {
            claimAll(requests, claiming);
        }
        List<Work> runnable = new ArrayList<>(n);
        for (Work w : works) {
            if (w.dispatched) {
                s.tracing.event(w, w.claim.held() ? "claimed" : "dispatched");
                w.orderKey = w.aggregate != null ? w.aggregateId : orderKeys.of(w);
                runnable.add(w);
            }
        }
        if (!runnable.isEmpty()) {
            inFlight.track(new Batch(runnable, s.now()));
            scheduler.submit(runnable);
        }
    }

    /**
     * Claims the batch and marks what is to run ({@link Work#dispatched}). A key found in progress with no live holder in
     * this pipeline may have been completed by this very pipeline between the store's answer and the look-up:
     * those are asked once more before being deferred.
     */
    private void claimAll(List<ClaimRequest> requests, List<Work> claiming) {
        long askedAt = s.now();
        List<ClaimResult> results = claims.claim(requests);
        if (results == null) {
            for (Work w : claiming) {
                settle.retryLater(w, StoreCalls.BACKOFF_MAX, outcomes.storeUnavailable);
            }
            return;
        }
        List<ClaimRequest> recheckRequests = null;
        List<Work> recheck = null;
        for (int j = 0; j < requests.size(); j++) {
            Work w = claiming.get(j);
            Claims.Verdict verdict = claims.apply(w, results.get(j), true, askedAt);
            if (verdict == Claims.Verdict.RECHECK) {
                if (recheck == null) {
                    recheckRequests = new ArrayList<>();
                    recheck = new ArrayList<>();
                }
                recheckRequests.add(requests.get(j));
                recheck.add(w);
            } else if (verdict == Claims.Verdict.RUN || verdict == Claims.Verdict.DEFER) {
                w.dispatched = true;
            }
        }
        if (recheck != null) {
            long askedAgainAt = s.now();
            List<ClaimResult> again = claims.claim(recheckRequests);
            for (int j = 0; j < recheck.size(); j++) {
                Work w = recheck.get(j);
                if (again == null) {
                    settle.retryLater(w, StoreCalls.BACKOFF_MAX, outcomes.storeUnavailable);
                } else {
                    Claims.Verdict verdict = claims.apply(w, again.get(j), false, askedAgainAt);
                    if (verdict == Claims.Verdict.RUN || verdict == Claims.Verdict.DEFER) {
                        w.dispatched = true;
                    }
                }
            }
        }
    }
}
