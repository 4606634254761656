package dev.idem.runtime.pipeline;

import dev.idem.spi.ClaimResult;
import dev.idem.spi.DedupStore;
import dev.idem.spi.StoreException;
import java.time.Duration;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * What a worker does with the work at the head of a key: waits out a deferral and claims again, sends a
 * suspect to run alone and records its start, then runs it through the pipeline's {@link RunStrategy}.
 * Handing back a queued work gives up its claim.
 */
final class Runs implements KeyScheduler.Runner {

    private static final Logger log = LoggerFactory.getLogger(Runs.class);

    private final PipelineState s;
    private final Settlement settle;
    private final Claims claims;
    private final RunStrategy strategy;

    Runs(PipelineState state, Settlement settle, Claims claims, RunStrategy strategy) {
        this.s = state;
        this.settle = settle;
        this.claims = claims;
        this.strategy = strategy;
    }

    @Override
    public Step run(Work w, boolean alone) {
        try {
            if (s.aborting()) {
                settle.abandon(w);
                return Step.HANDED_BACK;
            }
            if (w.isSettled()) {
                return Step.NEXT;
            }
            if (w.claimPending) {
                long wait = w.deferredUntil - s.now();
                if (wait > 0) {
                    return Step.park(wait);
                }
                Step step = claimAgain(w);
                if (step != null) {
                    return step;
                }
            }
            if (w.suspect && w.claimed) {
                if (!alone) {
                    return Step.ISOLATE;
                }
                Step step = recordStart(w);
                if (step != null) {
                    return step;
                }
            }
            return strategy.execute(w);
        } catch (RuntimeException e) {
            log.error("Pipeline '{}' failed while handling {}; handing it back to the broker", s.name,
                    w.describe(), e);
            settle.abandon(w);
            return Step.HANDED_BACK;
        }
    }

    @Override
    public void handBack(Work w) {
        settle.abandon(w);
    }

    /** A deferred work's claim, asked again once the other owner's lease ended; null to go on and run. */
    private Step claimAgain(Work w) {
        List<ClaimResult> results = claims.claimWithRetry(List.of(claims.request(w)));
        if (results == null) {
            settle.retryLater(w, PipelineTiming.STORE_BACKOFF_MAX);
            return Step.HANDED_BACK;
        }
        return switch (claims.apply(w, results.get(0), false)) {
            case RUN -> null;
            case DEFER -> Step.park(w.deferredUntil - s.now());
            default -> Step.NEXT;
        };
    }

    /**
     * Records a suspect's start in the store before its handler runs; dead-letters it instead once its
     * starts pass {@code max-deliveries}. Null to go on and run.
     */
    private Step recordStart(Work w) {
        int starts;
        try {
            starts = s.store.recordStart(w.storeKey, w.token);
            s.storeDown = false;
        } catch (StoreException e) {
            s.storeDown |= e.retriable();
            s.metrics.storeUnavailable.count(w);
            log.warn("Pipeline '{}': could not record the start of suspect {} ({}); handing it back", s.name,
                    w.describe(), e.getMessage());
            settle.retryLater(w, PipelineTiming.STORE_BACKOFF_MAX);
            return Step.HANDED_BACK;
        }
        if (starts == 0) {
            w.claimed = false;
            s.metrics.leaseLost.count(w);
            settle.retryLater(w, Duration.ZERO);
            return Step.HANDED_BACK;
        }
        int max = s.config.maxDeliveries();
        boolean recorded = starts != DedupStore.STARTS_NOT_RECORDED;
        int count = recorded ? starts : w.storeAttempt;
        w.startsRecorded = recorded ? starts : 0;
        if (count <= max) {
            return null;
        }
        String detail = recorded
                ? "the handler started " + (count - 1) + " times, each time alone, without completing (max-deliveries "
                        + max + "): it took its consumer down"
                : "the key was claimed " + count + " times without completing (max-deliveries " + max
                        + "): consumers died or lost their lease while handling it";
        log.warn("Pipeline '{}': {} is poison; dead-lettering it without running it: {}", s.name, w.describe(),
                detail);
        settle.deadLetter(w, "max-deliveries", detail, count - 1);
        return Step.NEXT;
    }
}
