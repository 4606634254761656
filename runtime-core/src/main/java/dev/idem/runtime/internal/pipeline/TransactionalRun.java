package dev.idem.runtime.internal.pipeline;

import dev.idem.api.ConcurrentUpdateException;
import dev.idem.api.PayloadException;
import dev.idem.api.RejectedException;
import dev.idem.spi.OutboxStore;
import dev.idem.spi.StoreException;
import dev.idem.spi.StoredReply;
import dev.idem.spi.TransactionalDedupStore;
import dev.idem.spi.TransactionalDedupStore.StoreTransaction;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Transactional mode: each run is one database transaction that records the key as completed and
 * holds the handler's writes; commit, then ack. The key was claimed beforehand, outside the
 * transaction, like in plain mode: that claim (and a suspect's recorded start) survives a rollback or
 * a crash, which is what lets a poison message be counted. The transaction takes the claim over when
 * it commits; a failed run rolled back everything but the claim, which is kept for a retry or
 * released before dead-lettering.
 */
final class TransactionalRun extends RunStrategy {

    private static final Logger log = LoggerFactory.getLogger(TransactionalRun.class);

    final TransactionalDedupStore store;
    /** The store's outbox, where the store keeps one; {@code null} otherwise, and then no run can emit. */
    final OutboxStore outbox;
    /** Wakes the outbox relay after a transaction that wrote to the outbox committed. */
    private final Runnable outboxWritten;
    private final Claims claims;
    private final ClaimedRun unprotected;
    /** The sequence guard, or {@code null}. */
    private final Sequences sequences;

    TransactionalRun(PipelineState state, Settlement settle, Outcomes outcomes, PipelineMetrics metrics, Steps steps,
            TransactionalDedupStore store, Runnable outboxWritten, Claims claims, ClaimedRun unprotected,
            Sequences sequences) {
        super(state, settle, outcomes, metrics, steps);
        this.store = store;
        this.outbox = store instanceof OutboxStore o ? o : null;
        this.outboxWritten = outboxWritten;
        this.claims = claims;
        this.unprotected = unprotected;
        this.sequences = sequences;
    }

    @Override
    String cannotEmit(Work w) {
        String cannot = super.cannotEmit(w);
        if (cannot == null && outbox == null) {
            return "pipeline '" + s.name + "' is transactional, and its dedup store keeps no outbox to write"
                    + " emitted messages in the handler's transaction; use the JDBC store";
        }
        return cannot;
    }

    @Override
    Step execute(Work w) {
        if (w.storeKey == null) {
            return unprotected.execute(w);
        }
        w.run.count++;
        TransactionalDedupStore.Outcome[] outcome = new TransactionalDedupStore.Outcome[1];
        Throwable failure = runResolvingConflicts(w, () -> runInTransaction(w, outcome));
        return settleRun(w, failure, outcome[0]);
    }

    /**
     * Runs several works in one transaction through {@link TransactionalDedupStore#runGroup}, each under a
     * savepoint; settles each as {@link #execute} would. A work whose optimistic update lost a race runs again
     * at once in a transaction of its own.
     */
    @Override
    Step[] executeGroup(List<Work> works) {
        if (works.size() == 1) {
            return new Step[] {execute(works.get(0))};
        }
        Step[] steps = new Step[works.size()];
        List<TransactionalDedupStore.GroupMember> members = new ArrayList<>(works.size());
        List<Integer> memberAt = new ArrayList<>(works.size());
        List<Throwable[]> handlerFailures = new ArrayList<>(works.size());
        for (int i = 0; i < works.size(); i++) {
            Work w = works.get(i);
            if (w.storeKey == null) {
                steps[i] = unprotected.execute(w);
                continue;
            }
            w.run.count++;
            Throwable[] handlerFailure = new Throwable[1];
            members.add(new TransactionalDedupStore.GroupMember(w.storeKey, w.fingerprint, s.config.retention(),
                    s.advanceOf(w), sequences != null && sequences.waitsForGaps(), work(w, handlerFailure)));
            memberAt.add(i);
            handlerFailures.add(handlerFailure);
        }
        if (members.isEmpty()) {
            return steps;
        }
        List<TransactionalDedupStore.GroupResult> results;
        for (int j = 0; j < members.size(); j++) {
            works.get(memberAt.get(j)).run.inTransaction = true;
        }
        try {
            results = store.runGroup(members, s.config.groupSavepoints());
            if (results.size() != members.size()) {
                throw new StoreException("The store answered " + results.size() + " results for a group of "
                        + members.size(), false);
            }
        } catch (RuntimeException e) {
            results = new ArrayList<>(members.size());
            for (int j = 0; j < members.size(); j++) {
                results.add(new TransactionalDedupStore.GroupResult.Failed(e));
            }
        } finally {
            for (int j = 0; j < members.size(); j++) {
                works.get(memberAt.get(j)).run.inTransaction = false;
            }
        }
        for (int j = 0; j < members.size(); j++) {
            Work w = works.get(memberAt.get(j));
            TransactionalDedupStore.GroupResult result = results.get(j);
            if (result instanceof TransactionalDedupStore.GroupResult.Done done) {
                steps[memberAt.get(j)] = settleRun(w, null, done.outcome());
                continue;
            }
            Exception cause = ((TransactionalDedupStore.GroupResult.Failed) result).cause();
            Throwable failure = handlerFailures.get(j)[0] != null ? handlerFailures.get(j)[0] : cause;
            TransactionalDedupStore.Outcome[] outcome = new TransactionalDedupStore.Outcome[1];
            if (failure instanceof ConcurrentUpdateException) {
                failure = resolveConflicts(w, failure, () -> runInTransaction(w, outcome));
            }
            steps[memberAt.get(j)] = settleRun(w, failure, outcome[0]);
        }
        return steps;
    }

    /** Settles a work after its transactional run: the outcome when it committed, else the failure. */
    Step settleRun(Work w, Throwable failure, TransactionalDedupStore.Outcome committed) {
        if (failure instanceof RejectedException) {
            // Rolled back; the claim, taken before the transaction, now completes the key (and raises the watermark).
            w.run.rejected = true;
            logRejected(w, failure);
            if (w.aggregate != null) {
                sequences.ran(w);
            }
            return unprotected.commit(w);
        }
        if (failure == null && committed == TransactionalDedupStore.Outcome.SEQUENCE_GAP) {
            // Rolled back before the work ran; the claim is still ours.
            return sequences.gap(w, -1);
        }
        if (failure == null) {
            // The committed transaction wrote the key as completed under its own token: nothing to release.
            w.claim.ended();
            if (w.aggregate != null && (committed == TransactionalDedupStore.Outcome.COMMITTED
                    || committed == TransactionalDedupStore.Outcome.STALE)) {
                // The aggregate's watermark is at or past the work's number now.
                sequences.ran(w);
            }
            switch (committed) {
                case COMMITTED -> {
                    if (w.run.emitted != null) {
                        metrics.emitted.increment(w.run.emitted.size());
                    }
                    if (w.run.emitted != null || w.run.replyInOutbox) {
                        outboxWritten.run();
                    }
                    settle.ack(w, outcomes.processed);
                }
                case STALE -> {
                    sequences.stale(w, -1);
                    settle.ack(w, outcomes.stale);
                }
                case DUPLICATE -> claims.onDuplicate(w, true);
                default -> {
                    if (claims.onDuplicate(w, false)) {
                        return unprotected.execute(w);
                    }
                }
            }
            return Step.NEXT;
        }
        Step retry = retryOrGiveUp(w, failure);
        if (retry != null) {
            return retry;
        }
        if (failure instanceof Steps.ClaimLostException) {
            // A step found the key taken over: the new owner decides; this copy goes back to find its outcome.
            outcomes.failed.count(w);
            settle.retryLater(w, Duration.ZERO, outcomes.leaseLost);
            return Step.HANDED_BACK;
        }
        if (failure instanceof StoreException) {
            outcomes.storeUnavailable.count(w);
            log.warn("Pipeline '{}': the store failed {} times on {} ({}); handing it back unacked", s.name,
                    w.run.count, w.describe(), failure.getMessage());
            settle.abandon(w, StoreCalls.BACKOFF_MAX);
            return Step.HANDED_BACK;
        }
        if (failure instanceof PayloadException invalid) {
            return invalidPayload(w, invalid);
        }
        outcomes.failed.count(w);
        log.warn("Pipeline '{}': {} failed after {} run(s), rolled back; dead-lettering it: {}", s.name,
                w.describe(), w.run.count, failure.toString());
        settle.deadLetter(w, causeOf(failure), failure.toString(), w.attempt());
        return Step.NEXT;
    }

    /** The handler's part of a transaction: its run, then what it emitted into the outbox. */
    private TransactionalDedupStore.Work work(Work w, Throwable[] handlerFailure) {
        return tx -> {
            Throwable t = runHandler(w, tx);
            if (t != null) {
                handlerFailure[0] = t;
                throw t instanceof Exception e ? e : new RuntimeException(t);
            }
            writeOutcome(tx, w);
        };
    }

    /**
     * What a successful run writes beside the handler in its transaction: what it emitted, to the outbox, and its
     * reply, recorded with the key and, through the outbox, published after the commit.
     */
    void writeOutcome(StoreTransaction tx, Work w) {
        if (w.run.emitted != null) {
            outbox.append(tx, s.namespace, w.run.emitted);
        }
        StoredReply reply = w.run.reply;
        if (reply != null) {
            s.replies.store().recordReply(tx, w.storeKey, reply);
            if (outbox != null) {
                outbox.append(tx, s.namespace, List.of(s.replies.message(w, reply)));
                w.run.replyInOutbox = true;
            }
        }
    }

    /** Runs the handler inside {@code runOnce}; the transaction's outcome lands in {@code outcome[0]}. */
    private Throwable runInTransaction(Work w, TransactionalDedupStore.Outcome[] outcome) {
        Throwable[] handlerFailure = new Throwable[1];
        Throwable failure;
        w.run.inTransaction = true;
        try {
            TransactionalDedupStore.Work work = work(w, handlerFailure);
            outcome[0] = w.aggregate == null ? store.runOnce(w.storeKey, w.fingerprint, s.config.retention(), work)
                    : store.runOnce(w.storeKey, w.fingerprint, s.config.retention(), s.advanceOf(w),
                            sequences.waitsForGaps(), work);
            return null;
        } catch (Exception e) {
            failure = handlerFailure[0] != null ? handlerFailure[0] : e;
        } finally {
            w.run.inTransaction = false;
        }
        return failure;
    }
}
