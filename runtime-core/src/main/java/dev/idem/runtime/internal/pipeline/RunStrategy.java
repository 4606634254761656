package dev.idem.runtime.internal.pipeline;

import dev.idem.api.ConcurrentUpdateException;
import dev.idem.api.NonRetryableException;
import dev.idem.api.PayloadException;
import dev.idem.runtime.config.RetryPolicy;
import dev.idem.runtime.internal.payload.Payloads;
import dev.idem.spi.TransactionalDedupStore.StoreTransaction;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Supplier;
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

    /** The dead-letter cause of a payload that does not read. */
    static final String INVALID_PAYLOAD = "invalid-payload";

    final PipelineState s;
    final Settlement settle;
    final Outcomes outcomes;
    final PipelineMetrics metrics;
    final Steps steps;

    RunStrategy(PipelineState state, Settlement settle, Outcomes outcomes, PipelineMetrics metrics, Steps steps) {
        this.s = state;
        this.settle = settle;
        this.outcomes = outcomes;
        this.metrics = metrics;
        this.steps = steps;
    }

    /** Runs the handler once and settles or parks; says what comes next for the work's ordering key. */
    abstract Step execute(Work w);

    /**
     * Runs several works, the heads of as many keys, and says what comes next for each key, in order. One at a time
     * here; {@link TransactionalRun} runs them in shared transactions ({@code transactional.group}).
     */
    Step[] executeGroup(List<Work> works) {
        Step[] steps = new Step[works.size()];
        for (int i = 0; i < steps.length; i++) {
            steps[i] = execute(works.get(i));
        }
        return steps;
    }

    /**
     * Runs the handler once with its timeout; returns its failure, or null on success. What it emitted lands
     * in the work's {@link Run#emitted} on success.
     */
    Throwable runHandler(Work w, StoreTransaction transaction) {
        long start = s.now();
        long deadline = start + s.config.handlerTimeout().toNanos();
        w.run.begin(deadline);
        Throwable failure = null;
        Emissions emissions = emissionsOf(w);
        s.tracing.run(w, w.attempt());
        MDC.put(Pipeline.MDC_KEY, w.key);
        try {
            // Read on the worker, as the run's first step: a payload that does not read throws PayloadException.
            Object payload = s.payloads.prepare(w.message.payload());
            RunContext context = contextOf(w, deadline, transaction, emissions);
            s.handler.handle(new DeliveredMessage(w.message, w.key, w.attempt(), payload, s.payloads), context);
            if (emissions != null) {
                w.run.emitted = emissions.emitted();
            }
            w.run.reply = context.replied();
        } catch (Throwable t) {
            failure = t;
        } finally {
            MDC.remove(Pipeline.MDC_KEY);
            w.run.end();
            metrics.handler.record(s.now() - start, TimeUnit.NANOSECONDS);
        }
        // Every failure of the run is the run's, an OutOfMemoryError included: the allocation that failed never
        // happened and the handler's stack is gone, so the heap is usually fine again. retryOrGiveUp makes sure
        // such a failure counts only for a run that ran alone.
        return failure;
    }

    /** What collects the messages a run of {@code w} emits; {@code null} when it cannot emit. */
    Emissions emissionsOf(Work w) {
        return cannotEmit(w) != null ? null
                : new Emissions(s.namespace, w.key, s.config.emitIdHeader(), s.tracing.context(w));
    }

    /** The handler's context for a run of {@code w} until {@code deadline} (ticker time). */
    RunContext contextOf(Work w, long deadline, StoreTransaction transaction, Emissions emissions) {
        return new RunContext(s.name, s.handlerLogger, deadline, s.ticker, transaction, emissions,
                emissions == null ? cannotEmit(w) : null, s.namespace, w.key, steps.of(w), s.payloads, s.replies, w);
    }

    /** Why a run of {@code w} cannot emit messages, for the handler's error; {@code null} when it can. */
    String cannotEmit(Work w) {
        if (w.key == null) {
            return "pipeline '" + s.name + "' runs this message without an idempotency key, so a re-run could"
                    + " not repeat the IDs of what it emits; give it a key (pipelines." + s.name + ".id)";
        }
        return null;
    }

    /**
     * After a failed run: parks the key for the back-off if another run is allowed, hands the work back
     * if the pipeline is aborting, sends a run that ran out of memory beside others to run again alone;
     * {@code null} when the failure is final.
     */
    Step retryOrGiveUp(Work w, Throwable failure) {
        if (s.aborting()) {
            settle.abandon(w);
            return Step.HANDED_BACK;
        }
        if (failure instanceof OutOfMemoryError && !w.claim.suspect() && !w.claim.leaseLost()) {
            // Other handlers ran beside it and shared the heap: the memory may have been theirs. Never final here,
            // whatever retry.max-attempts says: it runs again alone, as a suspect (its start recorded, nothing else
            // of the pipeline running), where running out of memory is its own failure, retried and then
            // dead-lettered like any other; and if that run takes the process down, max-deliveries counts it.
            w.claim.isolate();
            outcomes.retried.count(w);
            log.warn("Pipeline '{}': {} ran out of memory on run {} ({}) while other messages may have run; it runs"
                    + " again alone, where running out of memory counts as its own failure", s.name, w.describe(),
                    w.run.count, failure.toString());
            return Step.ISOLATE;
        }
        RetryPolicy retry = s.config.retry();
        if (failure instanceof NonRetryableException || w.run.count >= retry.maxAttempts() || w.claim.leaseLost()) {
            return null;
        }
        outcomes.retried.count(w);
        log.debug("Pipeline '{}': {} failed on run {} ({}); retrying", s.name, w.describe(), w.run.count,
                failure.toString());
        return Step.park(retry.backoffBefore(w.run.count + 1).toNanos());
    }

    /**
     * Runs the handler, and again at once while it throws {@link ConcurrentUpdateException}, up to
     * {@code retry.conflict-attempts} more runs; returns the last run's failure, or null.
     */
    Throwable runResolvingConflicts(Work w, Supplier<Throwable> run) {
        return resolveConflicts(w, run.get(), run);
    }

    /** {@link #runResolvingConflicts} after a first run that ended with {@code failure}. */
    Throwable resolveConflicts(Work w, Throwable failure, Supplier<Throwable> run) {
        int conflicts = 0;
        while (failure instanceof ConcurrentUpdateException && conflicts < s.config.retry().conflictAttempts()
                && !s.aborting() && !w.claim.leaseLost()) {
            conflicts++;
            outcomes.conflictRetried.count(w);
            log.debug("Pipeline '{}': {} lost an optimistic update ({}); running it again at once", s.name,
                    w.describe(), failure.getMessage());
            failure = run.get();
        }
        return failure;
    }

    /**
     * Dead-letters a message whose payload did not read as the pipeline's {@code payload.*} say (reading it is the
     * run's first step, so the handler did not run, unless the handler itself threw {@link PayloadException}): cause
     * {@value #INVALID_PAYLOAD}, not retried, its key released by the dead-lettering, counted. The log line names the
     * path, the position and what was expected, never the payload's content.
     */
    Step invalidPayload(Work w, PayloadException invalid) {
        outcomes.invalidPayload.count(w);
        log.warn("Pipeline '{}': {} has an invalid payload; dead-lettering it: {}", s.name, w.describe(),
                LogSafe.text(invalid.getMessage()));
        settle.deadLetter(w, INVALID_PAYLOAD, Payloads.deadLetterDetail(invalid), w.attempt());
        return Step.NEXT;
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
