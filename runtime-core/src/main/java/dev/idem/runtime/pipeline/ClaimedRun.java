package dev.idem.runtime.pipeline;

import dev.idem.api.RejectedException;
import dev.idem.spi.BrokerAdapter;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.SequenceAdvance;
import dev.idem.spi.SequencedDedupStore;
import dev.idem.spi.StoreException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Plain mode: the handler runs under the key's claim, then the key is completed in the store (in a
 * batch through {@link GroupCommit}, or here), then the message is acked. Also runs unprotected messages (no key, or a fingerprint mismatch set to
 * {@code process}): no claim, no completion.
 */
final class ClaimedRun extends RunStrategy {

    private static final Logger log = LoggerFactory.getLogger(ClaimedRun.class);
    private static final int COMPLETE_TRIES = 8;

    /** Where completions go in batches; {@code null} to complete each key here, on the worker. */
    private volatile GroupCommit groupCommit;

    ClaimedRun(PipelineState state, Settlement settle) {
        super(state, settle);
    }

    /** Sends later completions through {@code commits} ({@code commit.batch-size} above 1). */
    void commitThrough(GroupCommit commits) {
        this.groupCommit = commits;
    }

    @Override
    Step execute(Work w) {
        if (s.storeDown && w.claimed) {
            // The claim stays until its lease ends; the redelivery is deferred until then, then taken over.
            s.metrics.storeUnavailable.count(w);
            settle.retryLater(w, PipelineTiming.STORE_BACKOFF_MAX);
            return Step.HANDED_BACK;
        }
        w.runs++;
        Throwable failure = runResolvingConflicts(w, () -> runHandler(w, null));
        if (failure instanceof RejectedException) {
            w.rejected = true;
            logRejected(w, failure);
            return commit(w);
        }
        if (failure == null && w.emitted != null) {
            failure = publishEmitted(w);
        }
        if (failure == null) {
            return commit(w);
        }
        Step retry = retryOrGiveUp(w, failure);
        if (retry != null) {
            return retry;
        }
        s.metrics.failed.count(w);
        if (w.leaseLost) {
            // Another consumer owns the key now and runs it; this copy goes back to find its outcome.
            s.metrics.leaseLost.count(w);
            settle.retryLater(w, Duration.ZERO);
            return Step.HANDED_BACK;
        }
        log.warn("Pipeline '{}': {} failed after {} run(s); dead-lettering it: {}", s.name, w.describe(), w.runs,
                failure.toString());
        settle.deadLetter(w, causeOf(failure), failure.toString(), attemptOf(w));
        return Step.NEXT;
    }

    /**
     * Publishes what the run emitted, each confirmed, in order; returns the failure that stopped it, or null.
     * A failed run goes back to the handler's retries, and its re-run emits the same IDs again.
     */
    private Throwable publishEmitted(Work w) {
        BrokerAdapter adapter = s.adapter;
        for (OutboxStore.Emitted e : w.emitted) {
            try {
                adapter.publish(e.destination(), e.message());
                s.metrics.emitted.increment();
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
        if (!w.claimed) {
            s.handledOutcome(w).count(w);
            settle.ack(w);
            return Step.NEXT;
        }
        GroupCommit commits = groupCommit;
        if (commits != null && !w.suspect) {
            // A suspect runs alone and completes here, before anything else of the pipeline starts.
            return commits.submit(w);
        }
        Duration backoff = PipelineTiming.STORE_BACKOFF_MIN;
        for (int attempt = 1; ; attempt++) {
            long start = System.nanoTime();
            try {
                SequenceAdvance advance = s.advanceOf(w);
                boolean completed = advance == null ? s.store.complete(w.storeKey, w.token, s.config.retention())
                        : ((SequencedDedupStore) s.store).completeAndAdvance(w.storeKey, w.token,
                                s.config.retention(), advance);
                s.metrics.complete.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                s.storeDown = false;
                w.claimed = false;
                if (completed) {
                    s.handledOutcome(w).count(w);
                    settle.ack(w);
                    return Step.NEXT;
                }
                // Our lease ran out and another consumer took the key over: it decides the outcome.
                s.metrics.leaseLost.count(w);
                log.warn("Pipeline '{}': {} was handled but its lease had been taken over before completion;"
                        + " the new owner completes it", s.name, w.describe());
                settle.retryLater(w, Duration.ZERO);
                return Step.HANDED_BACK;
            } catch (StoreException e) {
                s.metrics.complete.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
                s.storeDown |= e.retriable();
                if (attempt >= COMPLETE_TRIES || !PipelineTiming.pause(backoff, s::aborting)) {
                    s.metrics.commitFailed.count(w);
                    log.error("Pipeline '{}': {} was handled but its completion could not be stored ({});"
                            + " not acking it: it will run again once its lease ends", s.name, w.describe(),
                            e.getMessage());
                    w.claimed = false;
                    settle.retryLater(w, Duration.ZERO);
                    return Step.HANDED_BACK;
                }
                backoff = backoff.multipliedBy(2);
            }
        }
    }
}
