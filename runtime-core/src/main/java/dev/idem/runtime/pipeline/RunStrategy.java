package dev.idem.runtime.pipeline;

import dev.idem.api.ConcurrentUpdateException;
import dev.idem.api.NonRetryableException;
import dev.idem.runtime.config.RetryPolicy;
import dev.idem.spi.TransactionalDedupStore.StoreTransaction;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.slf4j.MDC;

/**
 * How one claimed work's handler runs and is committed: {@link ClaimedRun} (run, then complete the
 * key) or {@link TransactionalRun} (the handler and the key's completion in one database transaction).
 * One {@link #execute} is one handler run; a retry parks the key and comes back here.
 */
abstract class RunStrategy {

    private static final Logger log = LoggerFactory.getLogger(RunStrategy.class);

    final PipelineState s;
    final Settlement settle;

    RunStrategy(PipelineState state, Settlement settle) {
        this.s = state;
        this.settle = settle;
    }

    /** Runs the handler once and settles or parks; says what comes next for the work's ordering key. */
    abstract Step execute(Work w);

    /** The run number the handler sees: runs of earlier owners that never completed, plus this process's. */
    static int attemptOf(Work w) {
        return w.storeAttempt - 1 + w.runs;
    }

    /**
     * Runs the handler once with its timeout; returns its failure, or null on success. What it emitted lands
     * in {@link Work#emitted} on success.
     */
    Throwable runHandler(Work w, StoreTransaction transaction) {
        long start = s.now();
        long deadline = start + s.config.handlerTimeout().toNanos();
        w.beginRun(deadline);
        w.emitted = null;
        w.rejected = false;
        Throwable failure = null;
        Emissions emissions = null;
        String cannotEmit = null;
        if (w.key == null) {
            cannotEmit = "pipeline '" + s.name + "' runs this message without an idempotency key, so a re-run could"
                    + " not repeat the IDs of what it emits; give it a key (pipelines." + s.name + ".id)";
        } else if (s.transactionalStore != null && s.outbox == null) {
            cannotEmit = "pipeline '" + s.name + "' is transactional, and its dedup store keeps no outbox to write"
                    + " emitted messages in the handler's transaction; use the JDBC store";
        } else {
            emissions = new Emissions(s.namespace, w.key, s.config.emitIdHeader(), s.tracing.context(w));
        }
        s.tracing.run(w, attemptOf(w));
        MDC.put(Pipeline.MDC_KEY, w.key);
        try {
            s.handler.handle(new DeliveredMessage(w.message, w.key, attemptOf(w)),
                    new RunContext(s.name, s.handlerLogger, deadline, s.ticker, transaction, emissions, cannotEmit));
            if (emissions != null) {
                w.emitted = emissions.emitted();
            }
        } catch (Throwable t) {
            failure = t;
        } finally {
            MDC.remove(Pipeline.MDC_KEY);
            w.endRun();
            s.metrics.handler.record(s.now() - start, TimeUnit.NANOSECONDS);
        }
        if (failure instanceof VirtualMachineError vme && !(vme instanceof StackOverflowError)) {
            // The JVM itself is in trouble (out of memory): not the message's failure, so not counted against it.
            throw vme;
        }
        return failure;
    }

    /**
     * After a failed run: parks the key for the back-off if another run is allowed, hands the work back
     * if the pipeline is aborting; {@code null} when the failure is final.
     */
    Step retryOrGiveUp(Work w, Throwable failure) {
        if (s.aborting()) {
            settle.abandon(w);
            return Step.HANDED_BACK;
        }
        RetryPolicy retry = s.config.retry();
        if (failure instanceof NonRetryableException || w.runs >= retry.maxAttempts() || w.leaseLost) {
            return null;
        }
        s.metrics.retried.count(w);
        log.debug("Pipeline '{}': {} failed on run {} ({}); retrying", s.name, w.describe(), w.runs,
                failure.toString());
        return Step.park(retry.backoffBefore(w.runs + 1).toNanos());
    }

    /**
     * Runs the handler, and again at once while it throws {@link ConcurrentUpdateException}, up to
     * {@code retry.conflict-attempts} more runs; returns the last run's failure, or null.
     */
    Throwable runResolvingConflicts(Work w, java.util.function.Supplier<Throwable> run) {
        return resolveConflicts(w, run.get(), run);
    }

    /** {@link #runResolvingConflicts} after a first run that ended with {@code failure}. */
    Throwable resolveConflicts(Work w, Throwable failure, java.util.function.Supplier<Throwable> run) {
        int conflicts = 0;
        while (failure instanceof ConcurrentUpdateException && conflicts < s.config.retry().conflictAttempts()
                && !s.aborting() && !w.leaseLost) {
            conflicts++;
            s.metrics.conflictRetried.count(w);
            log.debug("Pipeline '{}': {} lost an optimistic update ({}); running it again at once", s.name,
                    w.describe(), failure.getMessage());
            failure = run.get();
        }
        return failure;
    }

    /** Logs why a run ended as rejected. */
    void logRejected(Work w, Throwable rejection) {
        log.info("Pipeline '{}': {} rejected, acked without retry: {}", s.name, w.describe(),
                LogSafe.text(String.valueOf(rejection.getMessage())));
    }

    static String causeOf(Throwable failure) {
        return failure instanceof NonRetryableException ? "non-retryable" : "handler-failed";
    }
}
