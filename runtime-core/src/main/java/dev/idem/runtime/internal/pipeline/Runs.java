package dev.idem.runtime.internal.pipeline;

import dev.idem.spi.ClaimResult;
import dev.idem.spi.DedupStore;
import java.time.Duration;
import java.util.ArrayList;
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
    private final StoreCalls store;
    private final Outcomes outcomes;
    private final RunStrategy strategy;
    /**
     * The sequence guard, or {@code null}: checked before every run in plain mode; in transactional mode the run's
     * transaction checks it, and it is checked here only before a suspect's start is recorded, so that a suspect
     * waiting for its gap does not count starts it never made.
     */
    private final Sequences sequences;
    private final boolean checkEveryRun;
    /** How many ready works share one transaction ({@code transactional.group}); 1 in plain mode. */
    private final int groupSize;
    /** Runs ready works through the pipeline's batch handler; {@code null} when the handler is not one. */
    private final BatchRun batches;

    /**
     * @param checkEveryRun whether the sequence guard is checked before every run (plain mode)
     * @param groupSize how many ready works run through {@link RunStrategy#executeGroup} at once
     * @param batches runs ready works through a batch handler, or {@code null}
     */
    Runs(PipelineState state, Settlement settle, Claims claims, StoreCalls store, Outcomes outcomes,
            RunStrategy strategy, Sequences sequences, boolean checkEveryRun, int groupSize, BatchRun batches) {
        this.s = state;
        this.settle = settle;
        this.claims = claims;
        this.store = store;
        this.outcomes = outcomes;
        this.strategy = strategy;
        this.sequences = sequences;
        this.checkEveryRun = checkEveryRun;
        this.groupSize = groupSize;
        this.batches = batches;
    }

    @Override
    public Step run(Work w, boolean alone) {
        try {
            Step step = prepare(w, alone);
            return step != null ? step : strategy.execute(w);
        } catch (RuntimeException e) {
            return failed(w, e);
        }
    }

    /**
     * Runs several keys' heads: each is prepared as {@link #run} would, and those ready to run go in groups of
     * up to {@code transactional.group} through one database transaction each, in transactional mode.
     */
    @Override
    public void runAll(Work[] works, int count, boolean alone, Step[] steps) {
        if (batches != null && count > 1) {
            runBatch(works, count, alone, steps);
            return;
        }
        if (groupSize <= 1 || count == 1) {
            KeyScheduler.Runner.super.runAll(works, count, alone, steps);
            return;
        }
        List<Work> ready = new ArrayList<>(count);
        List<Integer> readyAt = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            try {
                steps[i] = prepare(works[i], alone);
            } catch (RuntimeException e) {
                steps[i] = failed(works[i], e);
            }
            if (steps[i] == null) {
                ready.add(works[i]);
                readyAt.add(i);
            }
        }
        for (int from = 0; from < ready.size(); from += groupSize) {
            int to = Math.min(ready.size(), from + groupSize);
            List<Work> group = ready.subList(from, to);
            Step[] groupSteps;
            try {
                groupSteps = strategy.executeGroup(group);
            } catch (RuntimeException e) {
                groupSteps = new Step[group.size()];
                for (int j = 0; j < group.size(); j++) {
                    groupSteps[j] = failed(group.get(j), e);
                }
            }
            for (int j = 0; j < group.size(); j++) {
                steps[readyAt.get(from + j)] = groupSteps[j];
            }
        }
    }

    /** Prepares each work as {@link #run} would, then runs those ready to run through the batch handler at once. */
    private void runBatch(Work[] works, int count, boolean alone, Step[] steps) {
        List<Work> ready = new ArrayList<>(count);
        List<Integer> readyAt = new ArrayList<>(count);
        for (int i = 0; i < count; i++) {
            try {
                steps[i] = prepare(works[i], alone);
            } catch (RuntimeException e) {
                steps[i] = failed(works[i], e);
            }
            if (steps[i] == null) {
                ready.add(works[i]);
                readyAt.add(i);
            }
        }
        if (ready.isEmpty()) {
            return;
        }
        Step[] batchSteps;
        try {
            batchSteps = batches.execute(ready);
        } catch (RuntimeException e) {
            batchSteps = new Step[ready.size()];
            for (int j = 0; j < ready.size(); j++) {
                batchSteps[j] = failed(ready.get(j), e);
            }
        }
        for (int j = 0; j < ready.size(); j++) {
            steps[readyAt.get(j)] = batchSteps[j];
        }
    }

    private Step failed(Work w, RuntimeException e) {
        log.error("Pipeline '{}' failed while handling {}; handing it back to the broker", s.name, w.describe(), e);
        settle.abandon(w);
        return Step.HANDED_BACK;
    }

    /**
     * What comes before a run: hands back when aborting, waits out a deferral and claims again, checks the
     * sequence, sends a suspect to run alone and records its start. {@code null} when the work is to run.
     */
    private Step prepare(Work w, boolean alone) {
        if (s.aborting()) {
            settle.abandon(w);
            return Step.HANDED_BACK;
        }
        if (w.isSettled()) {
            return Step.NEXT;
        }
        if (w.claim.pending()) {
            long wait = w.claim.deferredUntil() - s.now();
            if (wait > 0) {
                return Step.park(wait);
            }
            Step step = claimAgain(w);
            if (step != null) {
                return step;
            }
        }
        if (sequences != null && w.aggregate != null && w.claim.held()
                && (checkEveryRun || (w.claim.suspect() && alone))) {
            Step step = sequences.check(w);
            if (step != null) {
                return step;
            }
        }
        if (w.claim.suspect() && w.claim.held()) {
            if (!alone) {
                return Step.ISOLATE;
            }
            return recordStart(w);
        }
        return null;
    }

    @Override
    public void handBack(Work w) {
        settle.abandon(w);
    }

    /** A deferred work's claim, asked again once the other owner's lease ended; null to go on and run. */
    private Step claimAgain(Work w) {
        Claims.Verdict local = claims.heldHere(w);
        if (local == Claims.Verdict.DONE) {
            return Step.NEXT;
        }
        if (local == Claims.Verdict.DEFER) {
            return Step.park(w.claim.deferredUntil() - s.now());
        }
        long askedAt = s.now();
        List<ClaimResult> results = claims.claim(List.of(claims.request(w)));
        if (results == null) {
            settle.retryLater(w, StoreCalls.BACKOFF_MAX, outcomes.storeUnavailable);
            return Step.HANDED_BACK;
        }
        return switch (claims.apply(w, results.get(0), false, askedAt)) {
            case RUN -> null;
            case DEFER -> Step.park(w.claim.deferredUntil() - s.now());
            default -> Step.NEXT;
        };
    }

    /**
     * Records a suspect's start in the store before its handler runs; dead-letters it instead once its
     * starts pass {@code max-deliveries}. Null to go on and run.
     */
    private Step recordStart(Work w) {
        Integer recorded = store.recordStart(w);
        if (recorded == null) {
            settle.retryLater(w, StoreCalls.BACKOFF_MAX, outcomes.storeUnavailable);
            return Step.HANDED_BACK;
        }
        int starts = recorded;
        if (starts == 0) {
            w.claim.lost();
            settle.retryLater(w, Duration.ZERO, outcomes.leaseLost);
            return Step.HANDED_BACK;
        }
        boolean counted = starts != DedupStore.STARTS_NOT_RECORDED;
        int count = counted ? starts : w.claim.storeAttempt();
        w.claim.startsRecorded(counted ? starts : 0);
        int max = s.config.maxDeliveries();
        if (count <= max) {
            return null;
        }
        String detail = counted
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
