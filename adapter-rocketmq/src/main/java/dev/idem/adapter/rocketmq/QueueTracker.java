package dev.idem.adapter.rocketmq;

import dev.idem.adapter.rocketmq.RocketMqDelivery.Settle;
import dev.idem.spi.Delivery;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.function.BiPredicate;
import org.apache.rocketmq.common.message.MessageQueue;

/**
 * The offsets of the message queues one consumer owns, one {@link QueueState} each: the settles applied to them, what
 * is due to be committed (the offset after the highest contiguous finished one), which queues must be sought back for
 * a retry and when, and which must not be pulled for now.
 *
 * <p>Confined to the consumer thread; it never touches the consumer, whose seeks and commits stay with
 * {@link ConsumerLoop}.
 */
final class QueueTracker {

    private final Map<MessageQueue, QueueState> queues = new HashMap<>();
    /**
     * A queue holding this many offsets (finished ones behind an unfinished one) stops being pulled, which bounds the
     * memory and the redelivery after a crash.
     */
    private final int maxHeldPerQueue;

    QueueTracker(int maxInFlight) {
        this.maxHeldPerQueue = Math.max(10_000, 10 * maxInFlight);
    }

    /** The state of an owned queue, or {@code null} when this consumer does not own it (any more). */
    QueueState get(MessageQueue queue) {
        return queues.get(queue);
    }

    /** The queues owned now; a live view. */
    Set<MessageQueue> owned() {
        return queues.keySet();
    }

    /** The states of the queues owned now; a live view. */
    Collection<QueueState> states() {
        return queues.values();
    }

    /** The deliveries of {@code of} handed over and neither finished nor handed back. */
    List<Delivery> inFlightDeliveries(Collection<MessageQueue> of) {
        List<Delivery> out = new ArrayList<>();
        for (MessageQueue queue : of) {
            QueueState q = queues.get(queue);
            if (q != null) {
                q.inFlightDeliveries(out);
            }
        }
        return out;
    }

    /** Starts tracking {@code assigned}; a queue tracked already keeps its state. */
    void assigned(Collection<MessageQueue> assigned) {
        for (MessageQueue queue : assigned) {
            queues.computeIfAbsent(queue, QueueState::new);
        }
    }

    /**
     * Stops tracking {@code gone} and marks their states revoked, so that their deliveries settle nothing and their
     * buffered messages are dropped.
     */
    void forget(Collection<MessageQueue> gone) {
        for (MessageQueue queue : gone) {
            QueueState q = queues.remove(queue);
            if (q != null) {
                q.revoked = true;
            }
        }
    }

    /** Stops tracking every queue, as {@link #forget} does, once the consumer is shut down. */
    void forgetAll() {
        for (QueueState q : queues.values()) {
            q.revoked = true;
        }
        queues.clear();
    }

    /** Applies one settle to its queue; ignored when the queue was revoked or assigned anew since. */
    void apply(Settle s) {
        RocketMqDelivery d = s.delivery();
        QueueState q = d.queue;
        if (q.revoked || queues.get(q.queue) != q) {
            return;
        }
        if (s.kind() == Settle.Kind.ACK) {
            q.finish(d.slot);
        } else {
            q.retry(d.slot, d.epoch, System.nanoTime(), s.delayNanos());
        }
    }

    /** Nanoseconds until the first seek for a retry is due (0 if one is due now), at most {@code atMost}. */
    long nanosUntilSeek(long nowNanos, long atMost) {
        long nanos = atMost;
        for (QueueState q : queues.values()) {
            if (q.retryPending()) {
                nanos = Math.min(nanos, Math.max(0, q.nanosUntilSeek(nowNanos)));
            }
        }
        return nanos;
    }

    /**
     * Gives each queue whose retry is due to {@code seek} with the offset to seek to, then records it sought; a seek
     * that failed is tried again a second later.
     */
    void seekDueRetries(long nowNanos, BiPredicate<QueueState, Long> seek) {
        for (QueueState q : new ArrayList<>(queues.values())) {
            if (q.retryPending() && q.nanosUntilSeek(nowNanos) <= 0) {
                if (seek.test(q, q.seekTo())) {
                    q.sought();
                } else {
                    q.postponeSeek(nowNanos + TimeUnit.SECONDS.toNanos(1));
                }
            }
        }
    }

    /** The offsets committed last, per owned queue that had a commit in this assignment. */
    Map<MessageQueue, Long> lastCommitted() {
        Map<MessageQueue, Long> offsets = new HashMap<>();
        for (QueueState q : queues.values()) {
            if (q.lastCommitted() >= 0) {
                offsets.put(q.queue, q.lastCommitted());
            }
        }
        return offsets;
    }

    /** The owned queues that must not be pulled for now: a retry waits to be sought, or they hold too many offsets. */
    Set<MessageQueue> mustWait() {
        Set<MessageQueue> waiting = new HashSet<>();
        for (QueueState q : queues.values()) {
            if (q.retryPending() || q.held() >= maxHeldPerQueue) {
                waiting.add(q.queue);
            }
        }
        return waiting;
    }

    /** The offsets to commit: those of owned queues that moved since their last commit; others are left out. */
    Map<MessageQueue, Long> committable() {
        Map<MessageQueue, Long> offsets = new HashMap<>();
        for (QueueState q : queues.values()) {
            long offset = q.committable();
            if (offset >= 0) {
                offsets.put(q.queue, offset);
            }
        }
        return offsets;
    }

    /** Records a commit; queues no longer owned are left out. */
    void committed(Map<MessageQueue, Long> offsets) {
        offsets.forEach((queue, offset) -> {
            QueueState q = queues.get(queue);
            if (q != null) {
                q.committed(offset);
            }
        });
    }

    /** Where the group stands in each owned queue (its last commit, else the first offset handed over), if known. */
    Map<MessageQueue, Long> positions() {
        Map<MessageQueue, Long> positions = new HashMap<>();
        for (QueueState q : queues.values()) {
            long from = q.consumedFrom();
            if (from >= 0) {
                positions.put(q.queue, from);
            }
        }
        return positions;
    }
}
