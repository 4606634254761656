package dev.idem.adapter.kafka;

import dev.idem.adapter.kafka.KafkaDelivery.Settle;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.locks.LockSupport;

/**
 * The way back from the pipeline to the consumer thread: how many deliveries are handed over and not yet settled
 * (what leaves the pipeline room), and the settles queued for the consumer thread to apply, since only that thread
 * may touch the {@code KafkaConsumer} and the partitions' offsets.
 *
 * <p>Settling does not wake the consumer thread one settle at a time: the consumer thread says how far the count of
 * unsettled deliveries must fall before it is woken ({@link #awaitUnsettledAtMost}), typically until a whole batch
 * fits, and only the settle that gets it there, or a retry (whose seek should not wait), unparks it. Waking it for
 * every settle cost the consumer thread a loop and a poll per message, and the settling threads an unpark each.
 *
 * <p>Thread-safe. The settling threads (any thread of the pipeline, through {@link KafkaSubscription#settled})
 * call {@link #settled}; the consumer thread calls the rest.
 */
final class SettleQueue {

    private final Queue<Settle> settles = new ConcurrentLinkedQueue<>();
    private final AtomicInteger unsettled = new AtomicInteger();
    /** How many retries were queued so far: a wait ends when one more is. */
    private final AtomicInteger retries = new AtomicInteger();
    /** The consumer thread while it waits, else {@code null}; written after {@link #wakeAt}. */
    private volatile Thread waiter;
    /** While the consumer thread waits: the count of unsettled deliveries at which a settle wakes it. */
    private volatile int wakeAt;

    /** Consumer thread: {@code count} deliveries were handed over to the pipeline. */
    void handedOver(int count) {
        unsettled.addAndGet(count);
    }

    /**
     * Settling threads: one delivery was settled; {@code settle} is queued for the consumer thread unless it is
     * {@code null} (nothing left to apply: the subscription closes or the partition was revoked). Queued before the
     * count falls, so a consumer thread woken by the count finds it.
     */
    void settled(Settle settle) {
        boolean retry = settle != null && settle.kind() == Settle.Kind.RETRY;
        if (settle != null) {
            settles.add(settle);
            if (retry) {
                retries.incrementAndGet();
            }
        }
        int left = unsettled.decrementAndGet();
        Thread w = waiter;
        if (w != null && (left <= wakeAt || retry)) {
            LockSupport.unpark(w);
        }
    }

    /** Deliveries handed over and not yet settled. */
    int unsettled() {
        return unsettled.get();
    }

    /** Consumer thread: the next queued settle, or {@code null} when none is queued. */
    Settle poll() {
        return settles.poll();
    }

    /**
     * Consumer thread: the next queued settle, waiting up to {@code millis} for one.
     *
     * @return the settle, or {@code null} when none came in time or the thread was interrupted (its interrupt
     *         flag stays set)
     */
    Settle poll(long millis) {
        Settle s = settles.poll();
        if (s != null) {
            return s;
        }
        awaitUnsettledAtMost(unsettled.get() - 1, millis);
        return settles.poll();
    }

    /**
     * Consumer thread: waits up to {@code millis} until at most {@code atMost} deliveries are unsettled, or a retry
     * is queued.
     *
     * @return whether at most {@code atMost} are unsettled; {@code false} after a retry was queued, the time ran out
     *         or the thread was interrupted (its interrupt flag stays set)
     */
    boolean awaitUnsettledAtMost(int atMost, long millis) {
        if (unsettled.get() <= atMost) {
            return true;
        }
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(millis);
        wakeAt = atMost;
        waiter = Thread.currentThread();
        try {
            // Dekker's pairing: this thread publishes itself, then reads the counts; a settling thread changes a
            // count, then reads the waiter. One of the two sees the other, so no wake-up is lost.
            int retriesBefore = retries.get();
            while (unsettled.get() > atMost) {
                long left = deadline - System.nanoTime();
                if (left <= 0 || retries.get() != retriesBefore || Thread.currentThread().isInterrupted()) {
                    return false;
                }
                LockSupport.parkNanos(this, left);
            }
            return true;
        } finally {
            waiter = null;
        }
    }
}
