package dev.idem.runtime.internal.pipeline;

import dev.idem.runtime.internal.pipeline.Outcomes.Outcome;
import dev.idem.spi.DeadLetterReason;
import java.time.Duration;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Settles deliveries with the broker: the one place that guarantees each delivery is settled exactly once (ack,
 * retry later, dead-letter, or abandon: release and retry later), that a key's followers share its outcome, that
 * the delivery's outcome is counted, and that what it held in flight is given back. Nothing is acked here before
 * the store recorded the key as completed, except duplicates the store already knows and messages processed
 * unprotected by the user's choice; and no request before its reply was confirmed (see {@link Replies}).
 *
 * <p>A delivery handed back to the broker first leaves its key's queue in the scheduler, through the
 * {@link KeyScheduler.Slot} it carries, so that its redelivery cannot land behind the later messages of its key
 * still queued here. Thread-safe; any thread may settle.
 */
final class Settlement {

    private static final Logger log = LoggerFactory.getLogger(Settlement.class);

    private final PipelineState s;
    private final InFlight inFlight;
    private final Outcomes outcomes;
    private final StoreCalls store;

    Settlement(PipelineState state, InFlight inFlight, Outcomes outcomes, StoreCalls store) {
        this.s = state;
        this.inFlight = inFlight;
        this.outcomes = outcomes;
        this.store = store;
    }

    /**
     * The message is done: counts it as {@code outcome} and acks it, and its followers as duplicates. Nothing
     * happens to a work already settled, not even a count.
     */
    void ack(Work w, Outcome outcome) {
        if (w.message.replyTo() != null && !w.isSettled() && s.replies != null
                && !s.replies.beforeAck(w, outcome == outcomes.duplicate)) {
            // The key is completed (with the reply): the redelivery is a duplicate, which sends the stored reply.
            retryLater(w, StoreCalls.BACKOFF_MIN, outcomes.replyFailed);
            return;
        }
        if (!w.markSettled()) {
            return;
        }
        outcome.count(w);
        try {
            w.delivery.ack();
        } catch (RuntimeException e) {
            log.warn("Pipeline '{}': the broker refused the ack of {} ({}); it will come back as a duplicate",
                    s.name, w.describe(), e.getMessage());
        } finally {
            settled(w, w.outcome != null ? w.outcome : "acked");
        }
        for (Work follower : w.followers()) {
            ack(follower, outcomes.duplicate);
        }
    }

    /** Hands the message back to the broker unacked, with its followers; the claim, if any, is kept. */
    void retryLater(Work w, Duration delay) {
        retryLater(w, delay, null);
    }

    /**
     * Counts why the message goes back ({@code store-unavailable}, {@code lease-lost}, ...; {@code null} for no
     * count), then hands it back as {@link #retryLater(Work, Duration)} does, unless it is already settled.
     */
    void retryLater(Work w, Duration delay, Outcome why) {
        if (!w.markSettled()) {
            return;
        }
        if (why != null) {
            why.count(w);
        }
        KeyScheduler.Slot slot = w.slot;
        if (slot != null) {
            slot.detach();
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
        if (w.claim.held() && !release(w)) {
            retryLater(w, StoreCalls.BACKOFF_MAX);
            return;
        }
        if (!w.markSettled()) {
            return;
        }
        try {
            w.delivery.deadLetter(new DeadLetterReason(cause, detail, attempts, s.name, s.tracing.context(w)));
            outcomes.deadLettered.count(w);
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
        if (w.claim.held()) {
            release(w);
        }
        retryLater(w, delay);
    }

    /** Gives the claim back in the store; false when the store could not, and its lease runs out on its own. */
    boolean release(Work w) {
        if (!store.release(w)) {
            return false;
        }
        w.claim.ended();
        return true;
    }

    private void settled(Work w, String outcome) {
        s.tracing.settled(w, outcome);
        inFlight.settled(w);
    }

    /** The first copy was not completed: its followers go back to the broker to be claimed on their own. */
    private void handBackFollowers(Work w) {
        for (Work follower : w.followers()) {
            retryLater(follower, Duration.ZERO);
        }
    }
}
