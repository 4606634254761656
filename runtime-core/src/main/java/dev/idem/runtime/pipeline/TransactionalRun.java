package dev.idem.runtime.pipeline;

import dev.idem.spi.StoreException;
import dev.idem.spi.TransactionalDedupStore;
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

    private final TransactionalDedupStore store;
    private final Claims claims;
    private final ClaimedRun unprotected;

    TransactionalRun(PipelineState state, Settlement settle, Claims claims, ClaimedRun unprotected) {
        super(state, settle);
        this.store = state.transactionalStore;
        this.claims = claims;
        this.unprotected = unprotected;
    }

    @Override
    Step execute(Work w) {
        if (w.storeKey == null) {
            return unprotected.execute(w);
        }
        w.runs++;
        TransactionalDedupStore.Outcome[] outcome = new TransactionalDedupStore.Outcome[1];
        Throwable failure = runInTransaction(w, outcome);
        if (failure == null) {
            // The committed transaction wrote the key as completed under its own token: nothing to release.
            w.claimed = false;
            switch (outcome[0]) {
                case COMMITTED -> {
                    s.metrics.processed.count(w);
                    settle.ack(w);
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
        if (failure instanceof StoreException) {
            s.metrics.storeUnavailable.count(w);
            log.warn("Pipeline '{}': the store failed {} times on {} ({}); handing it back unacked", s.name,
                    w.runs, w.describe(), failure.getMessage());
            settle.abandon(w, PipelineTiming.STORE_BACKOFF_MAX);
            return Step.HANDED_BACK;
        }
        s.metrics.failed.count(w);
        log.warn("Pipeline '{}': {} failed after {} run(s), rolled back; dead-lettering it: {}", s.name,
                w.describe(), w.runs, failure.toString());
        settle.deadLetter(w, causeOf(failure), failure.toString(), attemptOf(w));
        return Step.NEXT;
    }

    /** Runs the handler inside {@code runOnce}; the transaction's outcome lands in {@code outcome[0]}. */
    private Throwable runInTransaction(Work w, TransactionalDedupStore.Outcome[] outcome) {
        Throwable[] handlerFailure = new Throwable[1];
        Throwable failure;
        w.inTransaction = true;
        try {
            outcome[0] = store.runOnce(w.storeKey, w.fingerprint, s.config.retention(), tx -> {
                Throwable t = runHandler(w, tx);
                if (t != null) {
                    handlerFailure[0] = t;
                    throw t instanceof Exception e ? e : new RuntimeException(t);
                }
            });
            return null;
        } catch (Exception e) {
            failure = handlerFailure[0] != null ? handlerFailure[0] : e;
        } finally {
            w.inTransaction = false;
        }
        return failure;
    }
}
