package dev.idem.runtime.internal.pipeline;

import dev.idem.api.PayloadException;
import dev.idem.api.RejectedException;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.OutboxStore;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Plain mode: the handler runs under the key's claim, then the key is completed in the store (in a batch through
 * {@link GroupCommit}, or here, on the worker), then the message is acked. Also runs unprotected messages (no
 * key, or a fingerprint mismatch set to {@code process}): no claim, no completion.
 */
final class ClaimedRun extends RunStrategy {

    private static final Logger log = LoggerFactory.getLogger(ClaimedRun.class);

    private final StoreCalls store;
    /** Where completions go in batches; {@code null} to complete each key here, on the worker. */
    private final GroupCommit groupCommit;

    ClaimedRun(PipelineState state, Settlement settle, Outcomes outcomes, PipelineMetrics metrics, Steps steps,
            StoreCalls store, GroupCommit groupCommit) {
        super(state, settle, outcomes, metrics, steps);
        this.store = store;
        this.groupCommit = groupCommit;
    }

    @Override
    Step execute(Work w) {
        if (store.isDown() && w.claim.held()) {
            // The claim stays until its lease ends; the redelivery is deferred until then, then taken over.
            settle.retryLater(w, StoreCalls.BACKOFF_MAX, outcomes.storeUnavailable);
            return Step.HANDED_BACK;
        }
        w.run.count++;
        return settleRun(w, runResolvingConflicts(w, () -> runHandler(w, null)));
    }

    /**
     * Settles a work after its handler ran, {@code failure} being what the run threw or {@code null}: publishes what
     * it emitted and completes it; or parks it for a retry, dead-letters it, hands it back.
     */
    Step settleRun(Work w, Throwable failure) {
        if (failure instanceof RejectedException) {
            w.run.rejected = true;
            logRejected(w, failure);
            return commit(w);
        }
        if (failure == null && w.run.emitted != null) {
            failure = publishEmitted(w);
        }
        if (failure == null) {
            return commit(w);
        }
        Step retry = retryOrGiveUp(w, failure);
        if (retry != null) {
            return retry;
        }
        if (failure instanceof PayloadException invalid && !w.claim.leaseLost()) {
            return invalidPayload(w, invalid);
        }
        outcomes.failed.count(w);
        if (w.claim.leaseLost()) {
            // Another consumer owns the key now and runs it; this copy goes back to find its outcome.
            settle.retryLater(w, Duration.ZERO, outcomes.leaseLost);
            return Step.HANDED_BACK;
        }
        log.warn("Pipeline '{}': {} failed after {} run(s); dead-lettering it: {}", s.name, w.describe(), w.run.count,
                failure.toString());
        settle.deadLetter(w, causeOf(failure), failure.toString(), w.attempt());
        return Step.NEXT;
    }

    /**
     * Publishes what the run emitted, each confirmed, in order; returns the failure that stopped it, or null.
     * A failed run goes back to the handler's retries, and its re-run emits the same IDs again.
     */
    private Throwable publishEmitted(Work w) {
        BrokerAdapter adapter = s.adapter;
        for (OutboxStore.Emitted e : w.run.emitted) {
            try {
                adapter.publish(e.destination(), e.message());
                metrics.emitted.increment();
            } catch (RuntimeException failure) {
                log.warn("Pipeline '{}': {} ran, but the message it emitted to '{}' (ID {}) was not confirmed ({});"
                        + " the run counts as failed", s.name, w.describe(), LogSafe.text(e.destination()),
                        e.message().messageId(), failure.getMessage());
                return failure;
            }
        }
        return null;
    }

    /** Completes the key of a handled work (raising its sequence watermark), then acks; or acks an unclaimed one. */
    Step commit(Work w) {
        if (!w.claim.held()) {
            settle.ack(w, outcomes.handled(w));
            return Step.NEXT;
        }
        if (groupCommit != null && !w.claim.suspect()) {
            // A suspect runs alone and completes here, before anything else of the pipeline starts.
            return groupCommit.submit(w);
        }
        switch (store.complete(w, s.advanceOf(w))) {
            case COMPLETED -> {
                w.claim.ended();
                settle.ack(w, outcomes.handled(w));
                return Step.NEXT;
            }
            case NOT_OWNER -> {
                // Our lease ran out and another consumer took the key over: it decides the outcome.
                w.claim.lost();
                log.warn("Pipeline '{}': {} was handled but its lease had been taken over before completion;"
                        + " the new owner completes it", s.name, w.describe());
                settle.retryLater(w, Duration.ZERO, outcomes.leaseLost);
                return Step.HANDED_BACK;
            }
            default -> {
                w.claim.ended();
                settle.retryLater(w, Duration.ZERO, outcomes.commitFailed);
                return Step.HANDED_BACK;
            }
        }
    }
}
