package dev.idem.runtime.pipeline;

import dev.idem.spi.DeadLetterReason;
import dev.idem.spi.StoreException;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Settles deliveries with the broker: the one place that guarantees each delivery is settled exactly
 * once (ack, retry later, dead-letter, or abandon: release and retry later), that a key's followers
 * share its outcome, and that the in-flight bound and the held keys are given back. Nothing is acked
 * here before the store recorded the key as completed, except duplicates the store already knows and
 * messages processed unprotected by the user's choice. Thread-safe; any thread may settle.
 */
final class Settlement {

    private static final Logger log = LoggerFactory.getLogger(Settlement.class);

    private final PipelineState s;
    private final PipelineMetrics metrics;
    private volatile KeyScheduler scheduler;

    Settlement(PipelineState state) {
        this.s = state;
        this.metrics = state.metrics;
    }

    /** Lets a work that goes back to the broker leave its key's queue first (see {@link KeyScheduler#detach}). */
    void orderThrough(KeyScheduler keys) {
        this.scheduler = keys;
    }

    /** The message is done: ack it, and its followers as duplicates. */
    void ack(Work w) {
        if (!w.markSettled()) {
            return;
        }
        try {
            w.delivery.ack();
        } catch (RuntimeException e) {
            log.warn("Pipeline '{}': the broker refused the ack of {} ({}); it will come back as a duplicate",
                    s.name, w.describe(), e.getMessage());
        } finally {
            settled(w, w.outcome != null ? w.outcome : "acked");
        }
        if (w.followers != null) {
            for (Work follower : w.followers) {
                metrics.duplicate.count(follower);
                ack(follower);
            }
        }
    }

    /** Hands the message back to the broker unacked, with its followers; the claim, if any, is kept. */
    void retryLater(Work w, Duration delay) {
        if (!w.markSettled()) {
            return;
        }
        KeyScheduler keys = scheduler;
        if (keys != null) {
            keys.detach(w);
        }
        try {
            w.delivery.retryLater(delay);
        } catch (RuntimeException e) {
            log.warn("Pipeline '{}': could not hand {} back to the broker ({}); it redelivers it on its own",
                    s.name, w.describe(), e.getMessage());
        } finally {
            settled(w, "handed-back");
        }
        handBackFollowers(w);
    }

    /**
     * Releases the key (so an operator's replay from the dead-letter destination is processed), then
     * dead-letters. If the key cannot be released the message goes back unacked instead, since a key
     * left claimed would make the replay look like yet another crashed attempt.
     */
    void deadLetter(Work w, String cause, String detail, int attempts) {
        if (w.claimed && !release(w)) {
            retryLater(w, PipelineTiming.STORE_BACKOFF_MAX);
            return;
        }
        if (!w.markSettled()) {
            return;
        }
        try {
            w.delivery.deadLetter(new DeadLetterReason(cause, detail, attempts, s.name, s.tracing.context(w)));
            metrics.deadLettered.count(w);
        } catch (RuntimeException e) {
            log.error("Pipeline '{}': could not dead-letter {} ({}); it stays unacked and will be redelivered",
                    s.name, w.describe(), e.getMessage());
        } finally {
            settled(w, "dead-lettered");
        }
        handBackFollowers(w);
    }

    /** Gives the claim back and returns the delivery unacked: used when stopping, and behind a handed-back message. */
    void abandon(Work w) {
        abandon(w, Duration.ZERO);
    }

    void abandon(Work w, Duration delay) {
        if (w.claimed) {
            release(w);
        }
        retryLater(w, delay);
    }

    boolean release(Work w) {
        long start = System.nanoTime();
        try {
            s.store.release(w.storeKey, w.token);
            w.claimed = false;
            return true;
        } catch (StoreException e) {
            log.warn("Pipeline '{}': could not release {} ({}); its lease runs out on its own", s.name,
                    w.describe(), e.getMessage());
            return false;
        } finally {
            metrics.release.record(System.nanoTime() - start, TimeUnit.NANOSECONDS);
        }
    }

    private void settled(Work w, String outcome) {
        s.tracing.settled(w, outcome);
        if (w.counted) {
            s.limit.release(1);
        }
        if (w.key != null) {
            s.heldKeys.remove(w.key, w);
        }
        Batch batch = w.batch;
        if (batch != null && batch.finish()) {
            s.tracked.remove(batch);
        }
    }

    /** The first copy was not completed: its followers go back to the broker to be claimed on their own. */
    private void handBackFollowers(Work w) {
        if (w.followers != null) {
            for (Work follower : w.followers) {
                retryLater(follower, Duration.ZERO);
            }
        }
    }
}
