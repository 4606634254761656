package dev.idem.runtime.internal.pipeline;

import dev.idem.api.BatchHandler;
import dev.idem.api.PayloadException;
import dev.idem.spi.StoreException;
import dev.idem.spi.TransactionalDedupStore;
import dev.idem.spi.TransactionalDedupStore.BatchMember;
import dev.idem.spi.TransactionalDedupStore.StoreTransaction;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a {@link BatchHandler} runs the heads of several keys: one handler call for the batch, then each message
 * settled as a single run would be. In plain mode the keys then complete (together, through group commit); in
 * transactional mode the call runs inside {@link TransactionalDedupStore#runBatch}, one transaction that completes
 * every key.
 *
 * <p>A batch whose handler throws is split in halves, each run again, down to single messages, which run through the
 * pipeline's {@link RunStrategy} like any other: so the usual retry, dead-letter and poison rules hold for the message
 * that fails, and a message's runs are counted only when it ran alone or its batch succeeded. Failures the handler
 * reports per message ({@code BatchContext.fail}) settle those messages as failed runs; in transactional mode the
 * batch's transaction is rolled back first and the others run again without them.
 */
final class BatchRun {

    private static final Logger log = LoggerFactory.getLogger(BatchRun.class);

    private final PipelineState s;
    private final Settlement settle;
    private final PipelineMetrics metrics;
    private final BatchHandler handler;
    /** The pipeline's single-message strategy: runs batches of one and messages run without a claim. */
    private final RunStrategy single;
    /** Plain mode's strategy, or {@code null} in transactional mode. */
    private final ClaimedRun plain;
    /** Transactional mode's strategy, or {@code null} in plain mode. */
    private final TransactionalRun transactional;
    private final StoreCalls store;

    BatchRun(PipelineState state, Settlement settle, PipelineMetrics metrics, RunStrategy single, StoreCalls store) {
        this.s = state;
        this.settle = settle;
        this.metrics = metrics;
        this.handler = (BatchHandler) state.handler;
        this.single = single;
        this.plain = single instanceof ClaimedRun c ? c : null;
        this.transactional = single instanceof TransactionalRun t ? t : null;
        this.store = store;
    }

    /** Runs the works, heads of as many keys, and says what comes next for each key, in order. */
    Step[] execute(List<Work> works) {
        Step[] steps = new Step[works.size()];
        List<Work> batch = new ArrayList<>(works.size());
        List<Integer> batchAt = new ArrayList<>(works.size());
        List<Object> payloads = new ArrayList<>(works.size());
        boolean storeDown = plain != null && store.isDown();
        for (int i = 0; i < works.size(); i++) {
            Work w = works.get(i);
            if (w.storeKey == null || !w.claim.held() || storeDown) {
                steps[i] = single.execute(w);
                continue;
            }
            try {
                // Read on the worker before the batch runs: a payload that does not read is not in the batch.
                payloads.add(s.payloads.prepare(w.message.payload()));
            } catch (PayloadException invalid) {
                w.run.count++;
                steps[i] = single.invalidPayload(w, invalid);
                continue;
            } catch (RuntimeException e) {
                steps[i] = single.execute(w);
                continue;
            }
            batch.add(w);
            batchAt.add(i);
        }
        run(batch, batchAt, payloads, steps);
        return steps;
    }

    /** Runs a batch, or its halves when it fails; each step lands at the work's index in {@code steps}. */
    private void run(List<Work> batch, List<Integer> at, List<Object> payloads, Step[] steps) {
        if (batch.isEmpty()) {
            return;
        }
        if (batch.size() == 1) {
            steps[at.get(0)] = single.execute(batch.get(0));
            return;
        }
        if (s.aborting()) {
            for (int i = 0; i < batch.size(); i++) {
                settle.abandon(batch.get(i));
                steps[at.get(i)] = Step.HANDED_BACK;
            }
            return;
        }
        if (transactional != null) {
            runTransactional(batch, at, payloads, steps);
        } else {
            runPlain(batch, at, payloads, steps);
        }
    }

    private void runPlain(List<Work> batch, List<Integer> at, List<Object> payloads, Step[] steps) {
        Call call = call(batch, payloads, null);
        if (call.failure != null) {
            split(batch, at, payloads, steps, call.failure);
            return;
        }
        for (int i = 0; i < batch.size(); i++) {
            Work w = batch.get(i);
            w.run.count++;
            steps[at.get(i)] = plain.settleRun(w, call.context.reported(i));
        }
    }

    private void runTransactional(List<Work> batch, List<Integer> at, List<Object> payloads, Step[] steps) {
        List<BatchMember> members = new ArrayList<>(batch.size());
        for (Work w : batch) {
            members.add(new BatchMember(w.storeKey, w.fingerprint, s.config.retention()));
            w.run.inTransaction = true;
        }
        Call[] ran = new Call[1];
        List<TransactionalDedupStore.Outcome> outcomes;
        Throwable failure = null;
        try {
            outcomes = transactional.store.runBatch(members, (transaction, running) -> {
                List<Work> part = running.size() == batch.size() ? batch : pick(batch, running);
                Call call = call(part, running.size() == batch.size() ? payloads : pick(payloads, running),
                        transaction);
                ran[0] = call;
                call.running = running;
                if (call.failure != null) {
                    throw call.failure instanceof Exception e ? e : new HandlerError(call.failure);
                }
                if (call.context.anyReported()) {
                    throw new Reported();
                }
                for (Work w : part) {
                    transactional.writeOutcome(transaction, w);
                }
            });
        } catch (Exception e) {
            outcomes = null;
            failure = e;
        } finally {
            for (Work w : batch) {
                w.run.inTransaction = false;
            }
        }
        Call call = ran[0];
        if (outcomes != null) {
            for (int i = 0; i < batch.size(); i++) {
                Work w = batch.get(i);
                w.run.count++;
                steps[at.get(i)] = transactional.settleRun(w, null, outcomes.get(i));
            }
            return;
        }
        if (call != null && call.failure != null) {
            split(batch, at, payloads, steps, call.failure);
            return;
        }
        if (call != null && call.context.anyReported()) {
            // Rolled back: the reported messages settle as failed runs, the others run again without them.
            List<Work> rest = new ArrayList<>(batch.size());
            List<Integer> restAt = new ArrayList<>(batch.size());
            List<Object> restPayloads = new ArrayList<>(batch.size());
            List<Integer> running = call.running;
            boolean[] ranHere = new boolean[batch.size()];
            for (int j = 0; j < running.size(); j++) {
                int i = running.get(j);
                ranHere[i] = true;
                Exception reported = call.context.reported(j);
                if (reported != null) {
                    batch.get(i).run.count++;
                    steps[at.get(i)] = transactional.settleRun(batch.get(i), reported, null);
                } else {
                    rest.add(batch.get(i));
                    restAt.add(at.get(i));
                    restPayloads.add(payloads.get(i));
                }
            }
            for (int i = 0; i < batch.size(); i++) {
                if (!ranHere[i]) {
                    // Completed already when the batch looked: the next try finds it a duplicate.
                    rest.add(batch.get(i));
                    restAt.add(at.get(i));
                    restPayloads.add(payloads.get(i));
                }
            }
            run(rest, restAt, restPayloads, steps);
            return;
        }
        // The store failed (no handler ran, or the commit failed): every message settles as a run the store failed.
        for (int i = 0; i < batch.size(); i++) {
            Work w = batch.get(i);
            w.run.count++;
            steps[at.get(i)] = transactional.settleRun(w, failure, null);
        }
    }

    /** Runs each half of a batch whose handler threw; the failure is logged, not counted: the halves decide. */
    private void split(List<Work> batch, List<Integer> at, List<Object> payloads, Step[] steps, Throwable failure) {
        log.debug("Pipeline '{}': a batch of {} failed ({}); running its halves to find the failing messages", s.name,
                batch.size(), failure.toString());
        metrics.batchSplits.increment();
        int half = batch.size() / 2;
        run(batch.subList(0, half), at.subList(0, half), payloads.subList(0, half), steps);
        run(batch.subList(half, batch.size()), at.subList(half, at.size()), payloads.subList(half, payloads.size()),
                steps);
    }

    /** One call of the handler with {@code batch}; its failure, what each message emitted, what it reported. */
    private Call call(List<Work> batch, List<Object> payloads, StoreTransaction transaction) {
        long start = s.now();
        long deadline = start + s.config.handlerTimeout().toNanos();
        List<DeliveredMessage> messages = new ArrayList<>(batch.size());
        List<RunContext> contexts = new ArrayList<>(batch.size());
        List<Emissions> emissions = new ArrayList<>(batch.size());
        for (int i = 0; i < batch.size(); i++) {
            Work w = batch.get(i);
            w.run.begin(deadline);
            s.tracing.run(w, w.attempt());
            Emissions e = single.emissionsOf(w);
            emissions.add(e);
            messages.add(new DeliveredMessage(w.message, w.key, w.attempt(), payloads.get(i), s.payloads));
            contexts.add(single.contextOf(w, deadline, transaction, e));
        }
        Call call = new Call(new BatchRunContext(s.name, s.handlerLogger, messages, contexts));
        metrics.batchSize.record(batch.size());
        try {
            handler.handle(Collections.unmodifiableList(messages), call.context);
        } catch (Throwable t) {
            call.failure = t;
        } finally {
            long share = (s.now() - start) / batch.size();
            for (int i = 0; i < batch.size(); i++) {
                Work w = batch.get(i);
                w.run.end();
                metrics.handler.record(share, TimeUnit.NANOSECONDS);
                if (call.failure == null) {
                    if (emissions.get(i) != null) {
                        w.run.emitted = emissions.get(i).emitted();
                    }
                    w.run.reply = contexts.get(i).replied();
                }
            }
        }
        return call;
    }

    private static <T> List<T> pick(List<T> all, List<Integer> indexes) {
        List<T> picked = new ArrayList<>(indexes.size());
        for (int i : indexes) {
            picked.add(all.get(i));
        }
        return picked;
    }

    /** One handler call: its context, what it threw, and which members of the batch it ran for. */
    private static final class Call {
        final BatchRunContext context;
        Throwable failure;
        List<Integer> running;

        Call(BatchRunContext context) {
            this.context = context;
        }
    }

    /** Rolls back a batch transaction in which the handler reported failed messages. */
    private static final class Reported extends Exception {
        Reported() {
            super("the batch handler reported failed messages", null, false, false);
        }
    }

    /** Carries an {@link Error} the batch handler threw out of the transaction's work, to roll it back. */
    private static final class HandlerError extends Exception {
        HandlerError(Throwable error) {
            super(error.toString(), error, false, false);
        }
    }
}
