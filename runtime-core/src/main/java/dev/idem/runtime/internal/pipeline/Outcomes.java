package dev.idem.runtime.internal.pipeline;

import dev.idem.runtime.OutcomeListener;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The one place message outcomes are counted: {@code idem.messages{pipeline, outcome}}, a debug line per outcome
 * on the {@code idem.outcome} logger, and the {@link OutcomeListener}. A delivery's final outcome (processed,
 * rejected, duplicate, stale, dead-lettered; handed back for a store outage, a lost lease or a completion that
 * could not be stored) is counted by {@link Settlement} as it settles it; what happens on the way (a retry, a
 * deferral, a wait for a sequence gap, a run without a claim) by the stage that decides it. Thread-safe; counters
 * are created once, so counting only increments.
 */
final class Outcomes {

    static final String MESSAGES = "idem.messages";
    /** One debug line per outcome, for following single messages. */
    private static final Logger LOG = LoggerFactory.getLogger("idem.outcome");

    /** An outcome's counter, its name (the {@code outcome} tag) and its listener. */
    static final class Outcome {
        private final Counter counter;
        private final String pipeline;
        private final String name;
        private final OutcomeListener listener;

        private Outcome(MeterRegistry registry, String pipeline, String name, OutcomeListener listener) {
            this.counter = Counter.builder(MESSAGES).description("Messages by outcome")
                    .tag("pipeline", pipeline).tag("outcome", name).register(registry);
            this.pipeline = pipeline;
            this.name = name;
            this.listener = listener;
        }

        long total() {
            return (long) counter.count();
        }

        /** Counts a batch that failed as a whole, without a line per message. */
        void count(int messages) {
            counter.increment(messages);
        }

        void count(Work w) {
            counter.increment();
            w.outcome = name;
            if (LOG.isDebugEnabled()) {
                LOG.debug("Pipeline '{}': {} {}", pipeline, name, w.describe());
            }
            if (listener != null) {
                try {
                    listener.onOutcome(pipeline, name, w.message, w.key);
                } catch (RuntimeException e) {
                    LOG.warn("Outcome listener {} failed; ignored", listener, e);
                }
            }
        }
    }

    final Outcome processed;
    final Outcome duplicate;
    final Outcome failed;
    final Outcome retried;
    final Outcome deadLettered;
    final Outcome deferred;
    final Outcome fingerprintMismatch;
    /** Handler ran but its completion could not be written: the honest window, made visible. */
    final Outcome commitFailed;
    /** Another consumer took the key over while this one still ran the handler. */
    final Outcome leaseLost;
    /** Runs with no claim: the message had no usable key and the policy is {@code unprotected}. */
    final Outcome unprotected;
    /** Deliveries handed back because the store could not answer. */
    final Outcome storeUnavailable;
    /** Events numbered at or below their aggregate's watermark: acked, not run. */
    final Outcome stale;
    /** Events that had to wait for the numbers before them (counted once each, whatever came of it). */
    final Outcome gapWaited;
    /** Runs that ended with {@code RejectedException}: acked, not retried. */
    final Outcome rejected;
    /** Handler runs repeated at once after an optimistic update lost a race. */
    final Outcome conflictRetried;
    /** Payloads that did not read as the pipeline's {@code payload.*} say: dead-lettered, the handler not run. */
    final Outcome invalidPayload;
    /** Requests handed back because their reply was not confirmed by the broker (the key completed already). */
    final Outcome replyFailed;

    Outcomes(MeterRegistry registry, String pipeline, OutcomeListener listener) {
        processed = new Outcome(registry, pipeline, "processed", listener);
        duplicate = new Outcome(registry, pipeline, "duplicate", listener);
        failed = new Outcome(registry, pipeline, "failed", listener);
        retried = new Outcome(registry, pipeline, "retried", listener);
        deadLettered = new Outcome(registry, pipeline, "dead-lettered", listener);
        deferred = new Outcome(registry, pipeline, "deferred", listener);
        fingerprintMismatch = new Outcome(registry, pipeline, "fingerprint-mismatch", listener);
        commitFailed = new Outcome(registry, pipeline, "commit-failed", listener);
        leaseLost = new Outcome(registry, pipeline, "lease-lost", listener);
        unprotected = new Outcome(registry, pipeline, "unprotected", listener);
        storeUnavailable = new Outcome(registry, pipeline, "store-unavailable", listener);
        stale = new Outcome(registry, pipeline, "stale", listener);
        gapWaited = new Outcome(registry, pipeline, "gap-waited", listener);
        rejected = new Outcome(registry, pipeline, "rejected", listener);
        conflictRetried = new Outcome(registry, pipeline, "conflict-retried", listener);
        invalidPayload = new Outcome(registry, pipeline, "invalid-payload", listener);
        replyFailed = new Outcome(registry, pipeline, "reply-failed", listener);
    }

    /** What a handled work counts as: processed, or rejected when its handler rejected it. */
    Outcome handled(Work w) {
        return w.run.rejected ? rejected : processed;
    }
}
